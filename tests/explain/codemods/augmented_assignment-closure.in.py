# refuses: `h` is not bound in add() (a closure's or a global name)
def outer(h):
    def add():
        h.add_(1)  # written-here
    add()
