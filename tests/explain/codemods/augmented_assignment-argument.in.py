# refuses: `batch` is an argument of normalise(): rebinding it would leave the caller's tensor unwritten
def normalise(batch, mean):
    batch -= mean  # written-here
