"""Tiny constructors shared by the memory data files (plain data, no logic)."""


def n(id, state, gist, notes=None, touches=None):
    """One node: id, state letter (see the data files), gist, optional notes and touches."""
    return {"id": id, "state": state, "gist": gist, "notes": list(notes or []), "touches": list(touches or [])}


def e(frm, rel, to, notes=None):
    """One edge, written in reading order: `frm --rel--> to`."""
    return {"from": frm, "to": to, "rel": rel, "notes": list(notes or [])}
