"""Dies of an exception whose __str__ raises."""


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no string for you")


raise Unprintable()
