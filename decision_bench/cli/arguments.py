"""Command-line values shared by several commands, parsed by one rule each."""

from __future__ import annotations


def parse_agent_list(text: str, flag: str = "--agents") -> tuple[str, ...]:
    """"mlp, ensemble+" -> ("mlp", "ensemble+"): the names of a comma-separated
    list, spaces and empty items dropped, order kept.

    One rule for every command that takes --agents: a list naming no agent (""
    or ",") and a name given twice are refused with one line naming ``flag``
    (a repeated agent would run twice and write its rows twice). Whether each
    name exists is the command's own check.
    """
    names = tuple(name.strip() for name in str(text).split(",") if name.strip())
    if not names:
        raise ValueError(f"{flag} must name at least one agent, got {text!r}")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{flag} names {', '.join(map(repr, repeated))} twice, got {text!r}; give each agent once")
    return names
