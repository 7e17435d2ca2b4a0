"""A StatusNotifierItem host for the tray tests: it owns `org.kde.StatusNotifierWatcher`
on the session bus, as a desktop panel (GNOME's AppIndicator extension, KDE Plasma,
waybar) does, so the app's indicator registers with it. The test then reads what such a
panel shows: the indicator's label (Ayatana's `XAyatanaLabel`, which Tauri's tray title
sets) and its menu's lines (over `com.canonical.dbusmenu`).
"""

from __future__ import annotations

import threading
import time

from jeepney import DBusAddress, HeaderFields, MessageType, new_error, new_method_call, new_method_return, new_signal
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection

WATCHER = "org.kde.StatusNotifierWatcher"
WATCHER_PATH = "/StatusNotifierWatcher"
ITEM = "org.kde.StatusNotifierItem"
PROPS = "org.freedesktop.DBus.Properties"

INTROSPECTION = f"""<node>
  <interface name="{WATCHER}">
    <method name="RegisterStatusNotifierItem"><arg name="service" type="s" direction="in"/></method>
    <method name="RegisterStatusNotifierHost"><arg name="service" type="s" direction="in"/></method>
    <property name="RegisteredStatusNotifierItems" type="as" access="read"/>
    <property name="IsStatusNotifierHostRegistered" type="b" access="read"/>
    <property name="ProtocolVersion" type="i" access="read"/>
    <signal name="StatusNotifierItemRegistered"><arg type="s"/></signal>
  </interface>
</node>"""


class Watcher:
    """The watcher, served from a thread; `items` are (bus name, object path) pairs."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []
        self._stop = threading.Event()
        self._conn = open_dbus_connection(bus="SESSION")
        reply = self._conn.send_and_get_reply(message_bus.RequestName(WATCHER, 4))  # 4: do not queue
        if reply.body[0] != 1:
            raise RuntimeError(f"another StatusNotifierWatcher owns the name (RequestName answered {reply.body[0]})")
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        self._client = open_dbus_connection(bus="SESSION")

    def _properties(self) -> dict:
        return {
            "RegisteredStatusNotifierItems": ("as", [f"{n}{p}" for n, p in self.items]),
            "IsStatusNotifierHostRegistered": ("b", True),
            "ProtocolVersion": ("i", 0),
        }

    def _answer(self, msg) -> None:
        f = msg.header.fields
        member, iface, sender = f.get(HeaderFields.member), f.get(HeaderFields.interface), f.get(HeaderFields.sender)
        if member == "RegisterStatusNotifierItem":
            service = msg.body[0]
            # Ayatana sends its object path; others their bus name (the item then lives at /StatusNotifierItem).
            path, name = (service, sender) if service.startswith("/") else ("/StatusNotifierItem", service)
            self.items.append((name, path))
            self._conn.send(new_method_return(msg))
            self._conn.send(new_signal(DBusAddress(WATCHER_PATH, interface=WATCHER), "StatusNotifierItemRegistered", "s", (name + path,)))
        elif member == "RegisterStatusNotifierHost":
            self._conn.send(new_method_return(msg))
        elif iface == PROPS and member == "Get":
            props = self._properties()
            self._conn.send(new_method_return(msg, "v", (props[msg.body[1]],)))
        elif iface == PROPS and member == "GetAll":
            self._conn.send(new_method_return(msg, "a{sv}", (self._properties(),)))
        elif member == "Introspect":
            self._conn.send(new_method_return(msg, "s", (INTROSPECTION,)))
        else:
            self._conn.send(new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod", "s", (f"no {member}",)))

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self._conn.receive(timeout=0.2)
            except TimeoutError:
                continue
            except OSError:
                return
            if msg.header.message_type == MessageType.method_call:
                self._answer(msg)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._conn.close()
        self._client.close()

    def item(self, timeout: float = 20) -> tuple[str, str]:
        deadline = time.monotonic() + timeout
        while not self.items:
            if time.monotonic() > deadline:
                raise AssertionError("no indicator registered with the StatusNotifierWatcher")
            time.sleep(0.1)
        return self.items[-1]

    def _get(self, name: str, path: str, prop: str):
        addr = DBusAddress(path, bus_name=name, interface=PROPS)
        reply = self._client.send_and_get_reply(new_method_call(addr, "Get", "ss", (ITEM, prop)), timeout=5)
        return reply.body[0][1]

    def label(self) -> str:
        """The text the panel shows beside the icon."""
        name, path = self.item()
        return self._get(name, path, "XAyatanaLabel")

    def menu(self) -> list[str]:
        """The menu's item labels, top to bottom, nested items after their parent."""
        name, path = self.item()
        menu_path = self._get(name, path, "Menu")
        addr = DBusAddress(menu_path, bus_name=name, interface="com.canonical.dbusmenu")
        reply = self._client.send_and_get_reply(new_method_call(addr, "GetLayout", "iias", (0, -1, [])), timeout=5)
        labels: list[str] = []

        def walk(node) -> None:
            _id, props, children = node
            if "label" in props:
                labels.append(props["label"][1])
            for child in children:
                walk(child[1])

        walk(reply.body[1])
        return labels
