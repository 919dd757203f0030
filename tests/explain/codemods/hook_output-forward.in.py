# refuses: is not in a forward hook
def forward(self, x):
    x.relu_()  # written-here
