h = F.dropout(F.relu(self.fc(x), inplace=True), 0.5, training=True, inplace=True)  # written-here
