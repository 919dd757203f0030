# refuses: the written line is no in-place write of `output`
def clamp(module, inputs, output):
    inputs[0].clamp_(max=0.5)  # written-here
