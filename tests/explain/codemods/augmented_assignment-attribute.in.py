# refuses: `self.h` is an attribute: rebinding it would leave the tensor others hold unwritten
def step(self):
    self.h += 1  # written-here
