# module: ReLU
net = nn.Sequential(
    nn.Linear(4, 8),
    nn.ReLU(inplace=True),
    nn.Dropout(0.1, inplace=True),
)
act = nn.ReLU(inplace=True)  # built alone
