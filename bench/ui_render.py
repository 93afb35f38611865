"""How long the dashboard's live panels take to render on a large cluster: the work a panel
puts on the controller's event loop each time it is pushed.

A real controller (fake clock, in-memory journal) on ``--nodes`` (512) x 8 GPUs, 16 nodes a
leaf, 8 leaves a spine, given ``--jobs`` (3,000) jobs of 1-4 GPUs by three users; after the
scheduling pass (about half run, half wait), the cluster map and the queue panel are rendered
as an administrator sees them, the best of ``--repeat`` (3) timed. Prints one line per panel:
``overview 231 ms 0.9 MB``.

    PYTHONPATH=src python bench/ui_render.py [--nodes 512] [--jobs 3000]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from phalanx.api.convert import to_spec
from phalanx.api.ui.render import overview_fragment, queue_fragment
from phalanx.api.ui.session import Viewer
from phalanx.api.ui.views import QueueFilter
from phalanx.api.wire import JobRequest
from phalanx.config.clusterspec import regular_cluster
from phalanx.domain.caller import Caller
from phalanx.live.controller import Controller
from phalanx.live.journal import MemoryJournal
from phalanx.policies.catalog import profile
from phalanx.runtime import FakeClock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=512)
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    clock = FakeClock(1_700_000_000_000)
    cluster = regular_cluster(args.nodes, 8, 16, leaves_per_spine=8)
    controller = Controller(cluster, profile("phalanx"), MemoryJournal(), clock=clock)
    users = ("nobody", "root", "daemon")  # real users: their launches succeed
    specs = [
        to_spec(
            JobRequest.model_validate(
                {"command": ["/bin/true"], "gpus_per_task": i % 4 + 1, "time": "1:00:00"}
            ),
            Caller(-1, users[i % 3], False),
            "/tmp",
        )
        for i in range(args.jobs)
    ]
    controller.submit(specs)
    clock.advance(1)
    controller.step()
    who = Viewer(Caller(0, "root", True), None)
    panels: dict[str, Callable[[], str]] = {
        "overview": lambda: overview_fragment(controller, who),
        "queue": lambda: queue_fragment(controller, who, QueueFilter()),
    }
    for name, render in panels.items():
        render()  # the first pays for the templates' compilation
        best, html = float("inf"), ""
        for _ in range(args.repeat):
            start = time.perf_counter()
            html = render()
            best = min(best, time.perf_counter() - start)
        print(f"{name} {best * 1000:.0f} ms {len(html) / 1e6:.1f} MB")
    running = len(controller.jobs(states=["RUNNING"]))
    print(
        f"{args.nodes} nodes, {args.nodes * 8} GPUs; {running} running, "
        f"{args.jobs - running} pending"
    )


if __name__ == "__main__":
    main()
