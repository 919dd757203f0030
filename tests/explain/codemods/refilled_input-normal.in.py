z.normal_()  # written-here
