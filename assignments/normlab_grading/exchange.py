"""`nbgrader collect` for this course: a submission's name and time come from the exchange, not the student.

nbgrader's collect takes the student id from the inbound folder's name, which the student writes, and only warns
when the folder belongs to another account; it takes the submission time from that name and from the student's
own `timestamp.txt`. This collect (c.ExchangeFactory.collect in nbgrader_config.py) instead:

* refuses, with an error naming it, an inbound folder whose student id breaks the id rule (`ids.py`), or whose
  owner is not the account of that name where such an account exists (on a hub, every student has one): the
  folder is not collected, the other students' are, and the command ends with an error;
* times each submission by the server's clock: the latest change time (ctime) of the inbound folder and of
  everything in it, which no student can set back; it picks the submission to collect by that time and writes
  it into `timestamp.txt` of the collected copy, so lateness is judged on it.
"""

from __future__ import annotations

import datetime
import os

from nbgrader.exchange.default.collect import ExchangeCollect

from normlab_grading import ids

try:
    import pwd
except ImportError:   # no accounts to compare owners with
    pwd = None


def server_time(path: str) -> datetime.datetime:
    """The latest ctime of `path` and everything under it (links not followed), as a naive UTC datetime."""
    latest = os.lstat(path).st_ctime
    for top, dirs, files in os.walk(path):
        for name in dirs + files:
            latest = max(latest, os.lstat(os.path.join(top, name)).st_ctime)
    return datetime.datetime.fromtimestamp(latest, datetime.timezone.utc).replace(tzinfo=None)


def owner_problem(path: str, student_id: str) -> str:
    """Why the folder at `path` cannot be `student_id`'s by its owner ('' if it can, or if no account has that
    name, as on a hub where every server runs as one shared account)."""
    if pwd is None:
        return ""
    try:
        account = pwd.getpwnam(student_id)
    except KeyError:
        return ""
    uid = os.lstat(path).st_uid
    if uid == account.pw_uid:
        return ""
    try:
        owner = pwd.getpwuid(uid).pw_name
    except KeyError:
        owner = f"uid {uid}"
    return f"it is named for the student {student_id!r} but belongs to the account {owner!r}"


class NormlabCollect(ExchangeCollect):
    """nbgrader's collect with the id rule, the owner check as an error, and the server's time."""

    def _path_to_record(self, path):
        record = super()._path_to_record(path)
        reason = ids.problem(record["username"]) or owner_problem(path, record["username"])
        record["refused"] = reason
        # a refused folder is never chosen over another, nor counted as before the due date
        record["timestamp"] = datetime.datetime.max if reason else server_time(path)
        if reason and record["filename"] not in {r["filename"] for r in self.refused}:
            self.refused.append(record)
        return record

    def init_src(self):
        self.refused = []
        super().init_src()

    def _sort_by_timestamp(self, records):
        # newest first, refused ones last
        return sorted(records, key=lambda r: (not r.get("refused"), r["timestamp"]), reverse=True)

    def copy_files(self):
        self.src_records = [r for r in self.src_records if not r.get("refused")]
        super().copy_files()
        refused = sorted(self.refused, key=lambda r: r["filename"])
        for record in refused:
            self.log.error("not collected: the inbound folder %r: %s", record["filename"], record["refused"])
        if refused:
            self.fail(f"{len(refused)} inbound folder(s) refused (see the errors above); the other submissions "
                      "were collected")

    def do_copy(self, src, dest, log=None):
        super().do_copy(src, dest, log=log)
        stamp = server_time(src).replace(tzinfo=datetime.timezone.utc).strftime(self.timestamp_format)
        with open(os.path.join(dest, "timestamp.txt"), "w", encoding="utf-8") as fh:
            fh.write(stamp)
