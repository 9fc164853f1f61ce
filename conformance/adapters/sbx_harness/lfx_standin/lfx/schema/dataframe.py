"""Stand-in for lfx.schema.dataframe.DataFrame: a list of row dicts (the
real one is a pandas DataFrame; `to_dict("records")` reads both).

Like lfx's, it takes `Data` objects and plain dicts alike: a `Data` row
becomes its `.data` dict (spec appendix: `collected_files()` returns
`DataFrame(data=[Data(data={path, text|base64, size}), ...])`)."""


def _row(item):
    data = getattr(item, "data", None)
    if isinstance(data, dict) and not isinstance(item, dict):
        return dict(data)  # a Data object
    return dict(item)


class DataFrame(list):
    def __init__(self, data=None):
        super().__init__(_row(item) for item in (data or []))

    def to_dict(self, orient="records"):
        if orient != "records":
            raise ValueError("the stand-in DataFrame only knows orient='records'")
        return [dict(row) for row in self]
