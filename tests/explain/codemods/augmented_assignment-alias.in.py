# refuses: `total` is another name for `maps[0]`: rebinding it would leave the tensor `maps[0]` holds unwritten
total = maps[0]
total += maps[1]  # written-here
