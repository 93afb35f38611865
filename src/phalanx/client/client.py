"""The typed Python client of the controller's REST API, for library users.

Answers are the pydantic models of ``phalanx.api.wire``; refusals raise ``ApiError`` and a
controller that cannot be reached raises ``ControllerUnreachable`` (both from
``phalanx.client.wirecall``, so a caller catches the same errors on either path)::

    with Client() as client:
        [job_id] = client.submit(JobRequest(command=["hostname"], nodes="2"))
        print(client.job(job_id).state)

The CLI does not use this class: httpx and pydantic cost more to import than a ``squeue``
may take in all.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any, Self

import httpx
from pydantic import TypeAdapter

from phalanx.api.wire import (
    AcctRecord,
    BatchSubmit,
    CancelResult,
    JobInfo,
    JobList,
    JobRequest,
    NodeInfo,
    PartitionInfo,
    SubmitResult,
)
from phalanx.client.address import ControllerAddress, Tries, find_controller
from phalanx.client.wirecall import DEFAULT_TIMEOUT_S, ApiError, ControllerUnreachable, api_error

__all__ = ["ApiError", "Client", "ControllerUnreachable"]

_NODES = TypeAdapter(list[NodeInfo])
_PARTITIONS = TypeAdapter(list[PartitionInfo])
_ACCOUNTING = TypeAdapter(list[AcctRecord])
# Any host name will do over a Unix socket; it only fills the Host header.
_SOCKET_BASE_URL = "http://phalanx"


class Client:
    """A connection to the controller at ``address`` (default: ``find_controller()``).

    One ``httpx.Client`` underneath, kept alive between calls; close it with ``close()`` or
    a ``with`` block.
    """

    def __init__(
        self, address: ControllerAddress | None = None, *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.address = find_controller() if address is None else address
        self.timeout = timeout
        self._leader = self.address.urls[0] if self.address.urls else ""
        """The controller that answered last (several: ``PHALANX_URL`` as a comma list)."""
        headers = {"Accept": "application/json"}
        if self.address.socket_path is not None:
            transport = httpx.HTTPTransport(uds=self.address.socket_path)
            base_url = _SOCKET_BASE_URL
        else:
            transport = httpx.HTTPTransport()
            base_url = ""  # each call names its controller
            if self.address.token is not None:
                headers["Authorization"] = f"Bearer {self.address.token}"
        self._http = httpx.Client(
            transport=transport, base_url=base_url, headers=headers, timeout=timeout
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # ------------------------------------------------------------------------ jobs
    def submit(self, request: JobRequest) -> list[int]:
        """Submit one job; return its ids (one, or one per array task)."""
        answer = self._call("POST", "/v1/jobs", body=request.model_dump(mode="json"))
        return SubmitResult.model_validate(answer).job_ids[0]

    def submit_many(self, requests: Iterable[JobRequest]) -> list[list[int]]:
        """Submit several jobs in one call; return the ids of each, in order. All or none
        are accepted."""
        batch = BatchSubmit(jobs=list(requests))
        answer = self._call("POST", "/v1/jobs/batch", body=batch.model_dump(mode="json"))
        return SubmitResult.model_validate(answer).job_ids

    def jobs(
        self,
        all: bool = False,
        states: Iterable[str] | None = None,
        user: str | None = None,
        partition: str | None = None,
        ids: Iterable[int] | None = None,
    ) -> list[JobInfo]:
        """The jobs that match every filter given; without ``all``, unfinished jobs only."""
        query: dict[str, str] = {"all": "true" if all else "false"}
        if states is not None:
            query["state"] = ",".join(states)
        if user is not None:
            query["user"] = user
        if partition is not None:
            query["partition"] = partition
        if ids is not None:
            query["ids"] = ",".join(str(i) for i in ids)
        return JobList.model_validate(self._call("GET", "/v1/jobs", query=query)).jobs

    def job(self, job_id: int) -> JobInfo:
        """One job, finished or not; ``ApiError`` with status 404 when there is none."""
        return JobInfo.model_validate(self._call("GET", f"/v1/jobs/{job_id}"))

    def cancel(self, job_id: int) -> list[int]:
        """Cancel a job (an array job: all its tasks); return the ids cancelled."""
        answer = self._call("DELETE", f"/v1/jobs/{job_id}")
        return CancelResult.model_validate(answer).cancelled

    # ------------------------------------------------------------------------ cluster
    def nodes(self) -> list[NodeInfo]:
        return _NODES.validate_python(self._call("GET", "/v1/nodes"))

    def partitions(self) -> list[PartitionInfo]:
        return _PARTITIONS.validate_python(self._call("GET", "/v1/partitions"))

    def accounting(
        self,
        user: str | None = None,
        since: int | None = None,
        until: int | None = None,
        ids: Iterable[int] | None = None,
    ) -> list[AcctRecord]:
        """Records of finished jobs; ``since``/``until`` in ms since the Unix epoch."""
        query: dict[str, str] = {}
        if user is not None:
            query["user"] = user
        if since is not None:
            query["since"] = str(since)
        if until is not None:
            query["until"] = str(until)
        if ids is not None:
            query["ids"] = ",".join(str(i) for i in ids)
        return _ACCOUNTING.validate_python(self._call("GET", "/v1/accounting", query=query))

    def ping(self) -> str:
        """The controller's id: it changes when another controller takes over."""
        answer = self._call("GET", "/v1/ping")
        if not isinstance(answer, dict) or not isinstance(answer.get("controller_id"), str):
            raise ApiError(200, f"unexpected ping answer {answer!r}")
        return str(answer["controller_id"])

    # ------------------------------------------------------------------------ transport
    def _call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
    ) -> Any:
        socket_path = self.address.socket_path
        if socket_path is not None and not os.path.exists(socket_path):
            # httpcore leaks the socket of a failed Unix connect (a ResourceWarning at
            # garbage collection); the usual failure, no controller at all, is caught first.
            raise ControllerUnreachable(self.address.describe(), "No such file or directory")
        urls = self.address.urls
        deadline = time.monotonic() + self.timeout
        while True:
            # The one that answered last first, then the others, then a standby's hint.
            tries = Tries(self._leader or None, urls or [""])
            for base in tries:
                try:
                    response = self._http.request(method, base + path, params=query, json=body)
                except httpx.TimeoutException:
                    raise ControllerUnreachable(
                        self.address.describe(), "no answer in time"
                    ) from None
                except httpx.ConnectError as exc:
                    if len(urls) > 1:
                        continue  # nothing went out: another controller may lead
                    raise ControllerUnreachable(
                        self.address.describe(), str(exc) or "no connection"
                    ) from None
                except httpx.TransportError as exc:
                    raise ControllerUnreachable(
                        self.address.describe(), str(exc) or "no connection"
                    ) from None
                try:
                    answer = response.json() if response.content else None
                except ValueError:
                    answer = response.text
                if response.status_code == 503 and isinstance(answer, dict) and "leader" in answer:
                    hint = answer.get("leader")
                    if isinstance(hint, str):
                        tries.follow(hint)
                    continue
                if not response.is_success:
                    raise api_error(response.status_code, answer)
                self._leader = base
                return answer
            if len(urls) <= 1 or time.monotonic() >= deadline:
                raise ControllerUnreachable(self.address.describe(), "no controller leads")
            time.sleep(0.1)  # a takeover takes a second or two
