"""Dies of a BaseException that is not an Exception."""


class Stop(BaseException):
    pass


raise Stop("stopped")
