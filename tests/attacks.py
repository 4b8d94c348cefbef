"""Issue 25's attacks (and issue 29's) on a served playground, one phase each, bounded in count and time, on 127.0.0.1
only. Used by tests/test_public_server.py (asserts) and benchmarks/bench_public.py (the table).

Each client sends its own `X-Forwarded-For`, as a Space's proxy would add it (the server is started
trusting one proxy hop): the attackers are other clients than the visitors. During each phase a few
visitors keep editing (their latency and that each gets its own prompt are recorded) and a newcomer
opens the page; after it, the attacker goes quiet, and once its sessions are idle past the limit the
memory of the server and its workers, and the disk under its temporary folders, are measured."""

from __future__ import annotations

import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from gradio_client import Client, handle_file

# (`flood`, the scenario's attacker, and the request layer's attacks are imported so
# `python -m tests.attacks NAME URL` runs them.)
from tests.attacks_requests import (OUTCOME, deep_links, escaped_sessions, forged_addresses, format_examples,  # noqa: F401
                                    get_floods, tiny_files)
from tests.load_scenario import (CASE, HOSTILE_REGEX, LOOP, RESPONSE, SLOTS, flood, local_client,  # noqa: F401
                                 newcomer, refresh_args, shown_text)

CPU_BOMB = "{{ 9**(9**8) }}"  # Jinja folds it while compiling: two minutes of one core
MEMORY_BOMB = '{{ "a" * 10**9 }}'  # a gigabyte while compiling
BLANKS = '{{ " " * 3999000 }}'  # a 4-million-character prompt of spaces, shown with visible whitespace
MB = 1_000_000
# After the attacks, once their sessions are idle past the limit: memory of the server with its workers
# back within this of where it started, and the disk under its temporary folders (issue 25).
MEMORY_BACK_WITHIN, DISK_BACK_WITHIN = 300 * MB, 64_000


def case_args(messages: str | None = None) -> list:
    """The inputs of a case action: the case the form shows, then the form."""
    slots = [False] * 4 + [None] * 3 + [""] * 3
    messages = messages or json.dumps([{"role": "user", "content": "hi"}])
    return [CASE, messages, "", "", True, False, "", *slots[:SLOTS]]


def edited_args(chat: str, response: str = RESPONSE, messages: str | None = None) -> list:
    """The inputs of a button that saves the editors and the case form (download, checks)."""
    return [chat, response, *case_args(messages)]


def client(url: str, address: str) -> Client:
    """A gradio_client for one client (its address as the proxy reports it), sending nothing beyond url."""
    return local_client(url, address)


def _submit(c: Client, args: list, api_name: str, jobs: list) -> None:
    try:
        jobs.append(c.submit(*args, api_name=api_name))
    except Exception:  # noqa: BLE001 - an attacker does not care what it is answered
        pass


# ----- the attacks: each runs until `stop`, submitting without waiting, and counts its calls -------


def compile_bombs(url: str, stop: threading.Event, jobs: list, heavy: bool = False) -> None:
    """Downloads (which build the files, compiling the template) of templates Jinja folds for minutes."""
    c = client(url, "198.51.100.10")
    bombs = [CPU_BOMB, MEMORY_BOMB] if heavy else [CPU_BOMB]
    while not stop.is_set():
        for bomb in bombs:
            _submit(c, edited_args(bomb), "/download_zip", jobs)
        stop.wait(0.5)


def fill_memory(url: str, stop: threading.Event, jobs: list) -> None:
    """Eight sessions filled with 900k-character cases, duplicated; a 4 MB and a 40 MB template; a
    prompt of four million spaces with visible whitespace; a 5 KB share link of 1.3 million messages."""
    c = client(url, "198.51.100.20")
    big = json.dumps([{"role": "user", "content": "x" * 900_000}])
    state = {"v": 1, "chat_template": "{{ messages }}", "cases": [{"name": "a", "messages": [{}] * 1_300_000}]}
    import base64
    import zlib

    bomb = base64.urlsafe_b64encode(zlib.compress(json.dumps(state).encode(), 9)).decode().rstrip("=")
    _post(url, "/gradio_api/queue/join", b"x" * 40_000_000)  # refused before it is read
    for _ in range(8):
        if stop.is_set():
            return
        c.reset_session()
        _submit(c, refresh_args("{{ messages[0].content[:9] }}", content="x" * 900_000), "/refresh", jobs)
        for _ in range(4):
            _submit(c, case_args(big), "/duplicate_case", jobs)
        _submit(c, [("{# big #}" * 500_000), False], "/edit_chat_template", jobs)
        _submit(c, [*refresh_args(BLANKS)[:3], True, *refresh_args(BLANKS)[4:]], "/refresh", jobs)
        _submit(c, [json.dumps({"hash": "#s=" + bomb, "saved": None}), False], "/restore_page", jobs)
        stop.wait(0.3)


def big_tokenizers(url: str, stop: threading.Event, jobs: list, megabytes: float = 6) -> None:
    """Uploads of a large tokenizer.json (a word-level vocabulary), each different."""
    c = client(url, "198.51.100.30")
    folder = Path(os.environ.get("PLAYGROUND_ATTACK_FILES", "/tmp")) / f"attack-{os.getpid()}"
    folder.mkdir(parents=True, exist_ok=True)
    count = int(megabytes * 1_000_000 / 20)
    while not stop.is_set():
        salt = random.randrange(1 << 30)
        vocab = {f"w{salt}_{i}": i for i in range(count)}
        path = folder / "tokenizer.json"
        path.write_text(json.dumps({"version": "1.0", "model": {"type": "WordLevel", "vocab": vocab, "unk_token": f"w{salt}_0"},
                                    "pre_tokenizer": {"type": "Whitespace"}}))
        c.reset_session()
        _submit(c, [[handle_file(str(path))]], "/load_from_upload", jobs)
        stop.wait(1.0)
    for file in folder.iterdir():
        file.unlink()
    folder.rmdir()


def many_sessions(url: str, stop: threading.Event, jobs: list, sessions: int = 45) -> None:
    """One client, many sessions, each editing a looping template and a backtracking regex."""
    c = client(url, "198.51.100.40")
    hostile = [refresh_args(LOOP), refresh_args("{{ messages[0].content }}", HOSTILE_REGEX, content="a" * 3000 + "!")]
    while not stop.is_set():
        for index in range(sessions):
            c.reset_session()
            _submit(c, hostile[index % 2], "/refresh", jobs)
        stop.wait(1.0)


def hostile_checks(url: str, stop: threading.Event, jobs: list) -> None:
    """Two clients run the checks on looping templates, again and again."""
    clients = [client(url, "198.51.100.50"), client(url, "198.51.100.51")]
    while not stop.is_set():
        for c in clients:
            c.reset_session()
            _submit(c, edited_args(LOOP), "/run_all_checks", jobs)
        stop.wait(1.0)


def fill_disk(url: str, stop: threading.Event, jobs: list) -> None:
    """Downloads of the zip, uploads of 1 MB files, each different, and uploads cut off midway."""
    c = client(url, "198.51.100.60")
    _cut_off_upload(url, "198.51.100.61", 2_000_000)
    jobs.append(None)
    folder = Path(os.environ.get("PLAYGROUND_ATTACK_FILES", "/tmp")) / f"disk-{os.getpid()}"
    folder.mkdir(parents=True, exist_ok=True)
    while not stop.is_set():
        for _ in range(5):
            _submit(c, edited_args(f"{{# {random.random()} #}}{{{{ messages }}}}"), "/download_zip", jobs)
        path = folder / "chat_template.jinja"
        path.write_text("{# " + os.urandom(500_000).hex() + " #}")
        _submit(c, [[handle_file(str(path))], False], "/load_files", jobs)
        stop.wait(0.3)
    for file in folder.iterdir():
        file.unlink()
    folder.rmdir()


def recursing(depth: int, width: int) -> str:
    """A template whose macro calls itself `depth` levels deep, then writes `width` pieces (issue 29)."""
    return ("{%- macro r(n) -%}{%- if n > 0 -%}{{- r(n - 1) -}}{%- else -%}"
            "{%- for i in range(" + str(width) + ") -%}{{- 'x' -}}{%- endfor -%}{%- endif -%}{%- endmacro -%}"
            "{{- r(" + str(depth) + ") -}}")


def deep_call_chains(url: str, stop: threading.Event, jobs: list) -> None:
    """Issue 29: four sessions of one client edit (render and explain) a macro that recurses 50 levels
    and writes 99,000 pieces, and one of 120 levels and 19,900 pieces (under the page's piece cap):
    each edit cost the server 12-15 s and 600 MB building call sites, and each answer was 6.5 MB."""
    c = client(url, "198.51.100.70")
    templates = [recursing(50, 99_000), recursing(120, 19_900)]
    round_ = 0
    while not stop.is_set():
        for index in range(4):
            c.reset_session()
            _submit(c, refresh_args(templates[index % 2] + f"{{# {round_} #}}"), "/refresh", jobs)
        round_ += 1
        stop.wait(1.0)


def huge_conversation_link(messages: int = 9_000) -> str:
    """A share link's code (a few kB) for one case of `messages` empty messages: about the most a
    workspace holds (issue 29: 2,000 of them froze the tab that opened it for 75 s)."""
    import base64
    import zlib

    state = {"v": 1, "chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
                                       "{% endfor %}",
             "cases": [{"name": "huge", "messages": [{"role": "user", "content": ""}] * messages}], "case_name": "huge"}
    return base64.urlsafe_b64encode(zlib.compress(json.dumps(state).encode(), 9)).decode().rstrip("=")


def huge_conversation(url: str, stop: threading.Event, jobs: list) -> None:
    """Issue 29: a share link of the largest case a workspace holds, opened again and again by new
    sessions (what the server does for it; what the browser does is tests/browser/test_large_case.py,
    and bench_public measures a tab opening it)."""
    c = client(url, "198.51.100.80")
    link = huge_conversation_link()
    while not stop.is_set():
        c.reset_session()
        _submit(c, [json.dumps({"hash": "#s=" + link, "saved": None}), False], "/restore_page", jobs)
        stop.wait(0.5)


def quiet(url: str, stop: threading.Event, jobs: list) -> None:
    """No attack: what visitors and a newcomer get from this machine as it is loaded now."""
    jobs.append(None)
    stop.wait()


ATTACKS: dict[str, Callable[..., None]] = {
    "compile bombs (downloads)": compile_bombs,
    "memory: cases, big texts, share-link bomb": fill_memory,
    "big tokenizer uploads": big_tokenizers,
    "45 sessions of one client": many_sessions,
    "checks of 2 hostile clients": hostile_checks,
    "disk: downloads and uploads": fill_disk,
    "deep call chains (explained)": deep_call_chains,
    "a huge conversation by share link": huge_conversation,
    "Gradio's deep link after each edit": deep_links,
    "a format's examples added 60 times": format_examples,
    "uploads of 1,000 tiny files": tiny_files,
    "GETs of the page, config and API info": get_floods,
    "new sessions under escaped JSON keys": escaped_sessions,
    "new sessions from forged addresses": forged_addresses,
}


def _cut_off_upload(url: str, address: str, size: int) -> None:
    """An upload that says it is `size` bytes, sends half of them, and goes away."""
    host, port = url.split("//", 1)[1].strip("/").rsplit(":", 1)
    head = (b'--b\r\nContent-Disposition: form-data; name="files"; filename="tokenizer.json"\r\n'
            b"Content-Type: application/json\r\n\r\n")
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(b"POST /gradio_api/upload HTTP/1.1\r\nHost: " + host.encode() + b"\r\nX-Forwarded-For: "
                           + address.encode() + b"\r\nContent-Type: multipart/form-data; boundary=b\r\n"
                           + b"Content-Length: " + str(len(head) + size).encode() + b"\r\n\r\n" + head)
        connection.sendall(b"x" * (size // 2))
        time.sleep(0.5)  # the server has written what came before it sees the connection close


def _post(url: str, path: str, body: bytes) -> int:
    request = urllib.request.Request(url.rstrip("/") + path, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


# ----- measuring ---------------------------------------------------------------------------------


def tree_memory(pid: int) -> int:
    """Resident memory of process `pid` and every process under it (the render workers), in bytes."""
    return sum(tree_processes(pid).values())


def tree_processes(pid: int) -> dict[str, int]:
    """Resident memory in bytes of process `pid` and each process under it, by "pid command"."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    children.setdefault(int(stat.read().rsplit(")", 1)[1].split()[1]), []).append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    found: dict[str, int] = {}
    stack = [pid]
    while stack:
        current = stack.pop()
        stack.extend(children.get(current, []))
        try:
            with open(f"/proc/{current}/statm") as statm:
                rss = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            with open(f"/proc/{current}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode(errors="replace")[:80]
        except (OSError, IndexError, ValueError):
            continue
        found[f"{current} {command}"] = rss
    return found


def disk_use(folders: list[Path]) -> int:
    """Bytes of the files and folders under `folders` (a folder takes a block of disk of its own:
    1,000 uploaded files were 1,000 folders)."""
    total = 0
    for folder in folders:
        for root, directories, files in os.walk(folder):
            for name in (*files, *directories):
                try:
                    total += os.lstat(os.path.join(root, name)).st_size
                except OSError:
                    continue
    return total


@dataclass
class Phase:
    name: str
    latencies: list[float] = field(default_factory=list)  # seconds per visitor edit during the attack
    wrong: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    newcomer_page: float | None = None
    newcomer_edit: float | None = None
    visitor_checks: float | None = None  # a visitor's checks, run during the attack
    attacker_calls: int = 0
    outcome: dict = field(default_factory=dict)  # what the attacker was answered (its OUTCOME)
    memory_before: int = 0
    memory_peak: int = 0
    memory_after: int = 0
    processes_after: dict[str, int] = field(default_factory=dict)  # what memory_after is made of
    disk_before: int = 0
    disk_after: int = 0

    def p95(self) -> float:
        ordered = sorted(self.latencies)
        return statistics.quantiles(ordered, n=20, method="inclusive")[18] if len(ordered) > 1 else (ordered or [0])[0]

    def back(self) -> bool:
        """Whether memory and disk came back after the attack (within MEMORY_BACK_WITHIN, DISK_BACK_WITHIN)."""
        return self.memory_after <= self.memory_before + MEMORY_BACK_WITHIN and \
            self.disk_after <= self.disk_before + DISK_BACK_WITHIN


def cancel_all(jobs: list) -> None:
    """Cancel every job submitted (one request each: hundreds, one after another, took half a minute)."""

    def cancel(job) -> None:
        try:
            job.cancel()
        except Exception:  # noqa: BLE001 - an attacker does not care
            pass

    with ThreadPoolExecutor(16) as cancelling:
        cancelling.map(cancel, [job for job in jobs if job is not None])


class Attacker:
    """One attack in a process of its own (its client-side work does not slow the visitors' clients),
    started ahead of time (importing the client takes a second) and waiting: `go` starts it, `stop`
    ends it and gives how many calls it made. `quiet` needs no process."""

    def __init__(self, attack: Callable[..., None], url: str, **options: object) -> None:
        self.attack = attack
        self.name = next((n for n, a in ATTACKS.items() if a is attack), attack.__name__)
        self.outcome: dict = {}
        self.process = None if attack is quiet else subprocess.Popen(
            [sys.executable, "-m", "tests.attacks", attack.__name__, url, json.dumps(options)],
            cwd=Path(__file__).resolve().parent.parent, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def _say(self, line: str) -> None:
        if self.process is not None:
            try:
                self.process.stdin.write(line + "\n")
                self.process.stdin.flush()
            except OSError:  # it ended already: `stop` reads what it said
                pass

    def go(self) -> None:
        self._say("go")

    def stop(self) -> int:
        """End the attack: how many calls it made (what it was answered is in `outcome`)."""
        if self.process is None:
            return 0
        self._say("stop")
        out, _ = self.process.communicate(timeout=120)
        lines = out.strip().splitlines()
        self.outcome = next((json.loads(line[8:]) for line in lines if line.startswith("OUTCOME ")), {})
        return int(lines[-1]) if lines else 0


class Visitors:
    """`count` visitors, each its own client and session, editing one after another from `start` to
    `close`: an edit made while `measuring` counts for the `phase` under way when it was made (its
    errors and wrong prompts always do)."""

    def __init__(self, url: str, count: int) -> None:
        self.url, self.phase, self.measuring = url, Phase("visitors"), False
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._edit, args=(i,), daemon=True) for i in range(count)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=130)

    def _edit(self, index: int) -> None:
        c = client(self.url, f"192.0.2.{10 + index}")
        round_ = 0
        while not self.stop.is_set():
            marker = f"VISITOR-{index}-{round_}"
            started, phase, measuring = time.monotonic(), self.phase, self.measuring
            try:
                result = c.predict(*refresh_args(marker + ": {{ messages[0].content }}", content=f"hello {index}"),
                                   api_name="/refresh")
            except Exception as e:  # noqa: BLE001 - reported
                phase.errors.append(f"visitor {index}: {type(e).__name__}: {str(e)[:200]}")
                self.stop.wait(0.2)
                continue
            if measuring:  # an edit made during an attack counts for it, however long it took
                phase.latencies.append(time.monotonic() - started)
            if f"{marker}: hello {index}" not in shown_text(result[3] if isinstance(result, (list, tuple)) else ""):
                phase.wrong.append(f"visitor {index}: {str(result)[:200]}")
            round_ += 1
            self.stop.wait(0.2)


def _newcomer(url: str, address: str, phase: Phase, checks: bool) -> None:
    # A newcomer's page: the median of three (one request on a shared machine is noise).
    phase.newcomer_page, phase.newcomer_edit, wrong, c = newcomer(url, address, pages=3)
    phase.wrong += wrong
    if checks:
        started = time.monotonic()
        summary = c.predict(*edited_args("{{ messages[0].content }}"), api_name="/run_all_checks")[0]
        phase.visitor_checks = time.monotonic() - started
        if "checks-summary" not in summary or "BUSY" in summary:
            phase.wrong.append(f"visitor's checks: {summary[:200]}")


def run_phases(url: str, pid: int, folders: list[Path], attackers: list[Attacker], *, seconds: float = 6,
               visitors: int = 4, settle: float = 10, settled_within: float = 0) -> list[Phase]:
    """Each attack in turn for `seconds` while the same `visitors` keep editing and a newcomer (a new
    client each time) arrives; the next attack starts as soon as one ends. Then `settle` seconds of
    quiet (the attackers' sessions go idle past the limit), or, with `settled_within`, up to that
    long until memory and disk are back within bounds, before they are measured again. Every
    phase's `memory_before`/`disk_before` are from before the first attack, its `memory_after`/
    `disk_after` from after the last: what all of them left behind together."""
    memory, disk = tree_memory(pid), disk_use(folders)
    phases = [Phase(a.name, memory_before=memory, disk_before=disk) for a in attackers]
    crowd = Visitors(url, visitors)
    crowd.phase = phases[0]
    watching = threading.Event()
    peak = threading.Thread(target=_watch_peak, args=(pid, watching, crowd), daemon=True)
    peak.start()
    try:
        with ThreadPoolExecutor(1) as pool:
            for index, (attacker, phase) in enumerate(zip(attackers, phases)):
                crowd.phase = phase
                attacker.go()
                time.sleep(1.0)  # the attack is under way before anyone else arrives
                if index == 0:
                    crowd.start()
                crowd.measuring = True
                time.sleep(0.5)
                arrival = pool.submit(_newcomer, url, f"192.0.2.{200 + index}", phase, attacker.attack is hostile_checks)
                # At least `seconds`, and until the newcomer is served and the visitors have made a few
                # edits (a bound: a frozen server fails on its latencies, not here).
                deadline = time.monotonic() + seconds
                while time.monotonic() < deadline or not arrival.done() or \
                        (len(phase.latencies) < 3 and time.monotonic() < deadline + 60):
                    time.sleep(0.1)
                crowd.measuring = False
                try:
                    arrival.result()
                except Exception as e:  # noqa: BLE001
                    phase.errors.append(f"newcomer: {type(e).__name__}: {str(e)[:200]}")
                phase.attacker_calls = attacker.stop()
                phase.outcome = attacker.outcome
    finally:
        crowd.close()
        for attacker in attackers:  # any not yet stopped (an error above)
            if attacker.process is not None and attacker.process.poll() is None:
                attacker.process.kill()
                attacker.process.wait(timeout=10)
    time.sleep(settle)
    deadline = time.monotonic() + settled_within
    while True:
        processes, disk = tree_processes(pid), disk_use(folders)
        for phase in phases:
            phase.memory_after, phase.processes_after, phase.disk_after = sum(processes.values()), processes, disk
        if time.monotonic() >= deadline or all(phase.back() for phase in phases):
            break
        time.sleep(0.5)
    watching.set()
    peak.join(timeout=5)
    return phases


def run_phase(url: str, pid: int, folders: list[Path], attack: Callable[..., None], *, seconds: float = 6,
              visitors: int = 4, settle: float = 10, **options: object) -> Phase:
    """One attack for `seconds` while `visitors` edit and a newcomer arrives; then `settle` seconds of
    quiet (the attacker's sessions go idle past the limit) before memory and disk are measured again."""
    return run_phases(url, pid, folders, [Attacker(attack, url, **options)], seconds=seconds, visitors=visitors,
                      settle=settle)[0]


def _watch_peak(pid: int, done: threading.Event, crowd: Visitors) -> None:
    while not done.wait(0.5):
        crowd.phase.memory_peak = max(crowd.phase.memory_peak, tree_memory(pid))


if __name__ == "__main__":  # one attack, in a process of its own: python -m tests.attacks NAME URL [OPTIONS]
    # It waits for "go" on its standard input and runs until the next line (or two minutes at most).
    attack_name, target = sys.argv[1], sys.argv[2]
    extra = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    done, submitted = threading.Event(), []
    sys.stdin.readline()
    threading.Timer(120, done.set).start()
    threading.Thread(target=lambda: (sys.stdin.readline(), done.set()), daemon=True).start()
    globals()[attack_name](target, done, submitted, **extra)
    cancel_all(submitted)
    print("OUTCOME " + json.dumps(OUTCOME), flush=True)
    print(len(submitted), flush=True)
    os._exit(0)  # the client's own threads (streams of refused jobs) need not be waited for
