target = target_net(s2).max(1).values.detach()  # saved-here
loss = ((online(s) - target) ** 2).mean()
target_net.load_state_dict(online.state_dict())  # written-here
loss.backward()  # failed-here
