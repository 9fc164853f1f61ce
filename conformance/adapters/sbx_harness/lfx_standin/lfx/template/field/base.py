"""Stand-in for lfx.template.field.base.Output: names an output and the
component method that produces it."""


class Output:
    def __init__(self, name, method, display_name=None, **kwargs):
        self.name = name
        self.method = method
        self.display_name = display_name or name
        for key, val in kwargs.items():
            setattr(self, key, val)

    def __repr__(self):
        return "Output(name=%r, method=%r)" % (self.name, self.method)
