class Ema(nn.Module):
    def forward(self, x):
        self.state = torch.empty_like(self.state).copy_(x.detach())  # written-here
        return x * self.state
