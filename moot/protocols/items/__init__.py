"""What the labelled-item protocols share: label sets, closed choices, the item scenario base."""
