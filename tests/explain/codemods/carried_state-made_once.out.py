old_logp = policy(obs).log_prob(act).detach()  # saved-here
for _ in range(4):
    ratio = torch.exp(policy(obs).log_prob(act) - old_logp)
