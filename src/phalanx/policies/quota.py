"""``admit/quota`` (pre-filter): Kueue-style admission of whole gangs against per-account quota.

Each account (a Kueue ClusterQueue) has a nominal GPU quota: its ``quota_gpus`` if set, else
the cluster's GPUs split by the shares of the accounts seen. All accounts form one cohort: an
account over its nominal quota may borrow what the cohort leaves unused (no borrowing limit,
Kueue's default). A gang is admitted whole or not at all.
"""

from __future__ import annotations

from collections.abc import Mapping

from mypy_extensions import mypyc_attr

from phalanx.domain.state import Reason
from phalanx.sched.context import PassContext
from phalanx.sched.job import Job
from phalanx.sched.status import OK, Status

__all__ = ["QuotaAdmission"]


@mypyc_attr(allow_interpreted_subclasses=True)
class QuotaAdmission:
    plugin = "admit/quota"

    def __init__(self, params: Mapping[str, object]) -> None:
        self.borrowing = bool(params.get("borrowing", True))
        self._nominal: dict[str, float] = {}

    def nominal(self, account: str, ctx: PassContext) -> float:
        value = self._nominal.get(account)
        if value is None:
            acct = ctx.cluster.accounts.get(account)
            if acct is not None and acct.quota_gpus is not None:
                value = float(acct.quota_gpus)
            else:
                seen = set(ctx.state.account_gpus) | {account}
                shares = {a: self._shares(a, ctx) for a in seen}
                value = ctx.cluster.total_gpus * shares[account] / sum(shares.values())
            self._nominal[account] = value
        return value

    @staticmethod
    def _shares(account: str, ctx: PassContext) -> int:
        acct = ctx.cluster.accounts.get(account)
        return acct.shares if acct is not None else 1

    def pre_filter(self, job: Job, ctx: PassContext) -> Status:
        state = ctx.state
        used = state.account_gpus.get(job.account, 0.0)
        if used + job.gpus <= self.nominal(job.account, ctx):
            return OK
        if self.borrowing:
            cohort_used = sum(state.account_gpus.values())
            if cohort_used + job.gpus <= ctx.cluster.total_gpus:
                return OK
        return Status.wait(Reason.QUOTA, self.plugin)
