# refuses: clamp() returns already
def clamp(module, inputs, output):
    if module.training:
        return
    output.clamp_(max=0.5)  # written-here
