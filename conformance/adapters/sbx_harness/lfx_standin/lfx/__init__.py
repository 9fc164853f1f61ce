"""Stand-in for Langflow's lfx package (see ../README.md): only the names a
sandbox plugin imports, for checking it without Langflow installed."""

STANDIN = True
