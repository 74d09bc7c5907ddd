"""The dashboard's footer shows the keys of the focused panel, and is built
again only when those change: a panel switch that shows the same keys, or a
burst of binding refreshes that changes nothing, keeps its key widgets; a
rebuild styles each binding's key once, as it mounts."""
from __future__ import annotations

from ..support.console import running, settle


def footer_keys(app) -> list:
    """The footer's key widgets, in order."""
    return list(app.screen.query("FooterKey"))


def footer_text(app) -> list[str]:
    return [str(key.render()).strip() for key in footer_keys(app)]


async def test_the_footer_shows_the_focused_panels_keys_and_keeps_them_when_they_stay_the_same(console_app):
    app = console_app()
    async with running(app, (80, 24)) as pilot:
        await pilot.press("2")
        await settle(pilot, app)
        halts = footer_text(app)
        assert "a Acknowledge" in halts and "s Stop" not in halts, halts
        await pilot.press("1")
        await settle(pilot, app)
        sessions = footer_text(app)
        assert "s Stop" in sessions and "a Acknowledge" not in sessions, sessions
        await pilot.press("5")  # Loops, then the ack log: the keys every panel has, and no others
        await settle(pilot, app)
        loops, built = footer_text(app), footer_keys(app)
        assert "S Fleet stop" in loops and "s Stop" not in loops, loops
        await pilot.press("6")
        await settle(pilot, app)
        assert footer_text(app) == loops
        assert all(now is before for now, before in zip(footer_keys(app), built, strict=True)), "built again"
        for _ in range(3):  # refreshes that change nothing
            app.screen.refresh_bindings()
        await settle(pilot, app)
        assert all(now is before for now, before in zip(footer_keys(app), built, strict=True)), "built again"


async def test_under_a_dialog_the_footer_is_as_textuals_and_after_it_shows_the_panels_keys(console_app):
    """While a dialog is on top the dashboard's bindings read empty, and its
    footer shows nothing, as Textual's; however often they are refreshed
    meanwhile, once the dialog is gone the footer shows the keys of the
    panel focused."""
    from textual.screen import ModalScreen

    app = console_app()
    async with running(app, (80, 24)) as pilot:
        await pilot.press("2")
        await settle(pilot, app)
        dashboard = app.screen
        assert "a Acknowledge" in footer_text(app)
        for _ in range(3):
            await app.push_screen(ModalScreen())
            await settle(pilot, app)
            for _ in range(3):
                dashboard.refresh_bindings()
            assert not list(dashboard.query("FooterKey"))  # as Textual's: nothing under a dialog
            app.pop_screen()
        await settle(pilot, app)
        assert "a Acknowledge" in footer_text(app), footer_text(app)
        await pilot.press("1")
        await settle(pilot, app)
        shown = footer_text(app)
        assert "s Stop" in shown and "a Acknowledge" not in shown, shown


async def test_a_rebuild_styles_each_bindings_key_once(console_app, monkeypatch):
    """Textual's footer keys are born compact and bound to the footer's
    ``compact``: each was styled again twice after it mounted (the class added,
    then taken away). The look is Textual's all the same (the snapshots)."""
    from textual.dom import DOMNode
    from textual.widgets._footer import FooterKey

    app = console_app()
    async with running(app, (80, 24)) as pilot:
        await settle(pilot, app)
        restyled: list[str] = []
        update = DOMNode.update_node_styles

        def counting(node, animate: bool = True) -> None:
            if isinstance(node, FooterKey):
                restyled.append(str(node.render()).strip())
            update(node, animate=animate)

        monkeypatch.setattr(DOMNode, "update_node_styles", counting)
        await pilot.press("2")  # the halts panel: other keys, a rebuild
        await settle(pilot, app)
        keys = footer_text(app)
        assert "a Acknowledge" in keys, keys
        assert [key for key in restyled if "palette" not in key] == [], restyled
        assert all(not key.has_class("-compact") for key in footer_keys(app) if not key.has_class("-command-palette"))
