"""Stand-in for lfx.schema.dataframe.DataFrame: a list of row dicts (the
real one is a pandas DataFrame; `to_dict("records")` reads both)."""


class DataFrame(list):
    def __init__(self, data=None):
        super().__init__(dict(row) for row in (data or []))

    def to_dict(self, orient="records"):
        if orient != "records":
            raise ValueError("the stand-in DataFrame only knows orient='records'")
        return [dict(row) for row in self]
