def steer(module, args, kwargs, out):
    # with_kwargs=True: the output is still the last parameter
    out += direction * scale  # written-here
