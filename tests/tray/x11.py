"""Closing a window the way a window manager does: WM_DELETE_WINDOW, through libX11
(ctypes; nothing to install). Used by the tray tests and scripts/bench-tray-window.py."""

from __future__ import annotations

import ctypes

# ----- closing a window as a window manager does ------------------------------------

class ClientMessage(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("serial", ctypes.c_ulong),
        ("send_event", ctypes.c_int),
        ("display", ctypes.c_void_p),
        ("window", ctypes.c_ulong),
        ("message_type", ctypes.c_ulong),
        ("format", ctypes.c_int),
        ("data", ctypes.c_long * 5),
    ]


class XEvent(ctypes.Union):
    _fields_ = [("xclient", ClientMessage), ("pad", ctypes.c_long * 24)]


def x11():
    lib = ctypes.CDLL("libX11.so.6")
    lib.XOpenDisplay.restype = ctypes.c_void_p
    lib.XOpenDisplay.argtypes = [ctypes.c_char_p]
    lib.XDefaultRootWindow.restype = ctypes.c_ulong
    lib.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
    lib.XQueryTree.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.POINTER(ctypes.c_ulong)), ctypes.POINTER(ctypes.c_uint)]
    lib.XFetchName.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(ctypes.c_char_p)]
    lib.XInternAtom.restype = ctypes.c_ulong
    lib.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    lib.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long, ctypes.POINTER(XEvent)]
    lib.XFlush.argtypes = [ctypes.c_void_p]
    lib.XCloseDisplay.argtypes = [ctypes.c_void_p]
    return lib


def windows_named(lib, dpy, window, title: bytes) -> list[int]:
    found = []
    name = ctypes.c_char_p()
    if lib.XFetchName(dpy, window, ctypes.byref(name)) and name.value == title:
        found.append(window)
    root, parent = ctypes.c_ulong(), ctypes.c_ulong()
    children, count = ctypes.POINTER(ctypes.c_ulong)(), ctypes.c_uint()
    if lib.XQueryTree(dpy, window, ctypes.byref(root), ctypes.byref(parent), ctypes.byref(children), ctypes.byref(count)):
        for i in range(count.value):
            found.extend(windows_named(lib, dpy, children[i], title))
    return found


def close_window(title: bytes = b"KG Memory") -> int:
    """Send WM_DELETE_WINDOW to every top-level window of that title; how many."""
    lib = x11()
    dpy = lib.XOpenDisplay(None)
    if not dpy:
        raise SystemExit("cannot open the display")
    targets = windows_named(lib, dpy, lib.XDefaultRootWindow(dpy), title)
    protocols = lib.XInternAtom(dpy, b"WM_PROTOCOLS", 0)
    delete = lib.XInternAtom(dpy, b"WM_DELETE_WINDOW", 0)
    for w in targets:
        event = XEvent()
        event.xclient.type = 33  # ClientMessage
        event.xclient.window = w
        event.xclient.message_type = protocols
        event.xclient.format = 32
        event.xclient.data[0] = delete
        event.xclient.data[1] = 0  # CurrentTime
        lib.XSendEvent(dpy, w, 0, 0, ctypes.byref(event))
    lib.XFlush(dpy)
    lib.XCloseDisplay(dpy)
    return len(targets)
