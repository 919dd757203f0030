"""A GAN in PyTorch Lightning's manual optimisation whose D steps between D's and G's backward."""

import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class GAN(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.G = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 8))
        self.D = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())

    def training_step(self, batch, batch_idx):
        (real,) = batch
        opt_g, opt_d = self.optimizers()
        fake = self.G(torch.randn(real.shape[0], 5))
        prob_fake = self.D(fake)  # saved-here
        d_loss = -torch.mean(torch.log(self.D(real)) + torch.log(1 - prob_fake))
        g_loss = torch.mean(torch.log(1 - prob_fake))
        opt_d.zero_grad()
        self.manual_backward(d_loss, retain_graph=True)
        opt_d.step()  # written-here
        opt_g.zero_grad()
        self.manual_backward(g_loss)  # failed-here
        opt_g.step()

    def configure_optimizers(self):
        return torch.optim.Adam(self.G.parameters()), torch.optim.Adam(self.D.parameters())


if __name__ == "__main__":
    torch.manual_seed(0)
    data = DataLoader(TensorDataset(torch.randn(64, 8)), batch_size=16)
    trainer = pl.Trainer(max_epochs=1, accelerator="cpu", logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(GAN(), data)  # fit-here
