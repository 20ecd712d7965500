"""What every agent family shares and no user needs to import: the losses
(``losses``), the two network forms (``networks``) and the checks of configs
and shapes (``checks``). The agent core (agents/core.py) builds on them."""
