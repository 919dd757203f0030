def clamp(module, inputs, output):
    print(module)
    output = output.clamp(max=0.5)  # written-here
    return output
