"""The student against its teacher: distances, the loss on the line between them, predictions."""
