"""What the console bench prints: each part's figures against its target,
and the summary, with where the time went when a target is missed.

Used by ``console.py``; not a bench of its own.
"""
from __future__ import annotations

import statistics

from consolemeasure import ms, print_profile, stats_line

FIRST_PAINT_TARGET_MS, RSS_TARGET_MB, FRAME_TARGET_MS, LATENCY_TARGET_MS = 1000.0, 200.0, 50.0, 300.0


def print_first_paint(label: str, r: dict) -> None:
    met = r["first_paint_ms"] < FIRST_PAINT_TARGET_MS
    print(f"  {label:<30} first view applied {r['first_paint_ms']:7.1f} ms "
          f"(target < {FIRST_PAINT_TARGET_MS:g} ms: {'met' if met else 'MISSED'})")
    print(f"  {'':<30} constructed in {r['construct_ms']:.1f} ms; fleet.view started at {r['view_start_ms']:.1f} ms "
          f"and took {r['view_ms']:.1f} ms; apply_view {r['apply_ms']:.1f} ms; app idle again at "
          f"{r['settled_ms']:.1f} ms; rows {r['rows']}")


def report_static(out: dict, tmux_count: int, *, pace: float) -> None:
    print(f"\n  (a) watch=False; console given {tmux_count} tmux sessions; summary {out['summary']}")
    print_first_paint("big home", out["first"])
    print(f"  {'':<30} longest UI-loop stall during start-up {out['first_stall_ms']:.1f} ms")
    peak, current = out["rss"]
    print(f"  RSS with the big home on screen: peak (VmHWM) {peak:.1f} MB, current (VmRSS) {current:.1f} MB "
          f"(target < {RSS_TARGET_MB:g} MB: {'met' if max(peak, current) < RSS_TARGET_MB else 'MISSED'})")
    peak, current = out["rss_after"]
    print(f"  RSS after {len(out['frames']) + len(out['reorder'])} more refreshes: peak {peak:.1f} MB, "
          f"current {current:.1f} MB")
    frames, reorder = out["frames"], out["reorder"]
    print(f"\n  frame time of a refresh; {len(frames)} refreshes {pace:g} s apart as time passes "
          f"(panels capped at {out['max_rows']} rows):")
    for label, key in (("apply_view on the UI thread", "apply_ms"), ("UI loop stall, apply + render", "block_ms"),
                       ("leash.core.views.fleet.view in a worker thread", "view_ms"),
                       ("UI loop stall while view runs (GIL, timers)", "gil_ms")):
        print(f"    {label:<44} {stats_line([f[key] for f in frames])}")
    print(f"  {len(reorder)} refreshes with a new critical halt on top (the halts table is rebuilt):")
    for label, key in (("apply_view on the UI thread", "apply_ms"), ("UI loop stall, apply + render", "block_ms")):
        print(f"    {label:<44} {stats_line([f[key] for f in reorder])}")
    for name in ("tick_ages", "tick_countdown"):
        ticks = [ms(t) for n, t in out["ticks"] if n == name]
        print(f"  {'timer ' + name + ' on the UI thread':<46} {stats_line(ticks)}")


def report_watch(out: dict) -> None:
    print("\n  (b) watch=True, in its own process")
    print_first_paint("big home", out["first"])
    print(f"  {'':<30} fleet.view runs started by the first paint: {out['first_views']}")
    idle = out["idle"]
    print(f"  idle for {idle['seconds']:.1f} s (no other process writes): {idle['views']} fleet.view runs, "
          f"{idle['applies']} views applied ({stats_line(idle['apply_ms'])} of apply_view)")
    events = ", ".join(f"{name} x{count}" for name, count in sorted(idle["events"].items())) or "none"
    print(f"    file events in the home meanwhile: {events}")
    trials = out["trials"]
    print(f"  change-to-screen latency, {len(trials)} trials "
          "(`python -m leash.console.cli stop NAME` in another process):")
    for t in trials:
        if "latency_ms" not in t:
            print(f"    {t['name']:<20} NOT SEEN within 15 s (exit {t['code']}: {t['stderr'][:120]})")
            continue
        to_view = f"{t['to_view_ms']:6.1f} ms" if t["to_view_ms"] is not None else "    none"
        apply = f"{t['apply_ms']:5.1f} ms" if t["apply_ms"] is not None else "-"
        print(f"    {t['name']:<20} {t['before']:>7} -> stopped {t['latency_ms']:7.1f} ms after the stops.json mtime "
              f"(seen in {'the row' if t['shown'] == 'stopped' else 'the summary'}) "
              f"(CLI spawn -> screen {t['cli_ms']:5.0f} ms); fleet.view runs already going at the write: "
              f"{t['running']}; first run started after it: {to_view}; {t['refreshes']} apply(s) until seen, "
              f"the one that showed it took {apply}")
    peak, current = out["rss_after"]
    print(f"  most fleet.view runs at once in this app: {out['most_running']} (refresh_view is exclusive, but a "
          f"cancelled thread worker runs to its end)")
    print(f"  RSS of this console's process: at first paint peak {out['rss'][0]:.1f} MB, "
          f"current {out['rss'][1]:.1f} MB; "
          f"at the end peak {peak:.1f} MB, current {current:.1f} MB (target < {RSS_TARGET_MB:g} MB: "
          f"{'met' if max(peak, current) < RSS_TARGET_MB else 'MISSED'})")


def report_repair(out: dict) -> None:
    print("\n  (c) halts.db out of step with the ack log (its head record cleared), in its own process")
    print(f"  first fleet.view (rebuilds halts.db from the log: {out['rebuilt']} state_rebuilt line(s)) "
          f"{out['first_ms']:.1f} ms (a repair: no target); the next view {out['second_ms']:.1f} ms; "
          f"pending halts {out['halts']}; problems {out['problems'] or 'none'}")
    print(f"  RSS of that process: before the view peak {out['rss_before'][0]:.1f} MB, current "
          f"{out['rss_before'][1]:.1f} MB; after it peak {out['rss'][0]:.1f} MB, current {out['rss'][1]:.1f} MB "
          f"(target < {RSS_TARGET_MB:g} MB: {'met' if max(out['rss']) < RSS_TARGET_MB else 'MISSED'})")


def summary(results: dict) -> None:
    static, watched = results["static"], results["watch"]
    frames, reorder, trials = static["frames"], static["reorder"], watched["trials"]
    latencies = [t["latency_ms"] for t in trials if "latency_ms" in t]
    ages = [ms(t) for n, t in static["ticks"] if n == "tick_ages"]
    rows = [
        ("first paint, small home (first run)", results["small_cold"]["first_paint_ms"], FIRST_PAINT_TARGET_MS, "ms"),
        ("first paint, big home (watch=False)", static["first"]["first_paint_ms"], FIRST_PAINT_TARGET_MS, "ms"),
        ("first paint, big home (watch=True)", watched["first"]["first_paint_ms"], FIRST_PAINT_TARGET_MS, "ms"),
        ("RSS, big home on screen: peak VmHWM", static["rss"][0], RSS_TARGET_MB, "MB"),
        ("RSS, big home on screen: VmRSS", static["rss"][1], RSS_TARGET_MB, "MB"),
        ("RSS peak, watch=True console after its run", watched["rss_after"][0], RSS_TARGET_MB, "MB"),
        ("RSS peak, a first view that rebuilds halts.db", results["repair"]["rss"][0], RSS_TARGET_MB, "MB"),
        ("apply_view max, time passing", max(f["apply_ms"] for f in frames), FRAME_TARGET_MS, "ms"),
        ("apply_view max, halts table rebuilt", max(f["apply_ms"] for f in reorder), FRAME_TARGET_MS, "ms"),
        ("UI stall max (apply+render), time passing", max(f["block_ms"] for f in frames), FRAME_TARGET_MS, "ms"),
        ("UI stall max (apply+render), halts rebuilt", max(f["block_ms"] for f in reorder), FRAME_TARGET_MS, "ms"),
        ("tick_ages max (5 s timer, UI thread)", max(ages) if ages else 0.0, FRAME_TARGET_MS, "ms"),
        ("change-to-screen latency, median",
         statistics.median(latencies) if latencies else float("inf"), LATENCY_TARGET_MS, "ms"),
    ]
    print("\n(3) summary")
    print(f"  {'figure':<46} {'value':>10}   {'target':>10}   verdict")
    missed = []
    for label, value, target, unit in rows:
        met = value < target
        if not met:
            missed.append(label)
        print(f"  {label:<46} {value:>7.1f} {unit}   < {target:>6g} {unit}   {'met' if met else 'MISSED'}")
    view_ms = [f["view_ms"] for f in frames]
    print(f"  {'apply_view median, time passing':<46} {statistics.median(f['apply_ms'] for f in frames):>7.1f} ms")
    print(f"  {'leash.core.views.fleet.view (worker) median / max':<46} {statistics.median(view_ms):>7.1f} ms   "
          f"max {max(view_ms):.1f} ms (no target; it is on the latency path)")
    if latencies:
        print(f"  {'change-to-screen latency max':<46} {max(latencies):>7.1f} ms"
              + (f"   ({len(trials) - len(latencies)} trial(s) never showed the stop)"
                 if len(latencies) < len(trials) else ""))
    idle = watched["idle"]
    print(f"  {'refreshes while idle (watch=True)':<46} {idle['views'] / idle['seconds']:>7.1f} /s   (should be 0)")
    if not missed:
        print("\n  every target met")
        return
    print("\n  targets missed: " + "; ".join(missed))
    profiles = static["profiles"]
    ui_missed = any(label.startswith(("apply_view", "UI stall", "tick_ages", "first paint")) for label in missed)
    if ui_missed:
        print_profile("apply_view alone, 3 refreshes as time passes (UI thread)", profiles["apply"])
        print_profile("UI thread from apply_view until idle, 2 refreshes with the halts table rebuilt "
                      "(apply + Textual layout/render)", profiles["render"])
    if any(label.startswith(("change-to-screen", "first paint")) for label in missed) or ui_missed:
        print_profile("leash.core.views.fleet.view in the worker thread, 3 calls on the big home", profiles["view"])
