"""The calibrated model's predictions: protocols, new and carried cards, drafting, kept ones."""
