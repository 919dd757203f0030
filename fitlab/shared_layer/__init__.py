"""The shared layer: its gradient use by use, and a tied against an untied student."""
