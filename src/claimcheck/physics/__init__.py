"""The physics of a step: units, formats, geometry, weights, cards, ceilings and the roofline."""
