# Swap one LitGPT layer for a fusex op: pythia-14m's MLP activation (docs/torch.md).
import copy
import litgpt
import torch
import fusex_torch  # builds the C++ extension on first import, then loads it


class FusexMLP(litgpt.model.GptNeoxMLP):
    def forward(self, x):
        return self.proj(fusex_torch.gelu(self.fc(x), self.config.gelu_approximate))


model = litgpt.GPT(litgpt.Config.from_name("pythia-14m"))
fused = copy.deepcopy(model)
for block in fused.transformer.h:
    block.mlp.__class__ = FusexMLP  # same parameters and state dict, fusex forward and backward
idx = torch.randint(0, 50000, (2, 64))
torch.testing.assert_close(fused(idx), model(idx))
print("pythia-14m with fusex GeLU matches litgpt:", tuple(fused(idx).shape))
