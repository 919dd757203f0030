labels = net(X).detach()  # saved-here
nn.init.normal_(net.weight)
loss = ((net(X) - labels) ** 2).mean()
