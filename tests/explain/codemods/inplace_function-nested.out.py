h = F.dropout(F.relu(self.fc(x)), 0.5, training=True)  # written-here
