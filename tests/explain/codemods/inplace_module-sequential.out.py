# module: ReLU
net = nn.Sequential(
    nn.Linear(4, 8),
    nn.ReLU(),
    nn.Dropout(0.1, inplace=True),
)
act = nn.ReLU()  # built alone
