"""A local stand-in for the Hugging Face Hub, on 127.0.0.1, speaking the parts of its HTTP API that
huggingface_hub calls when the playground loads and publishes templates:

- `GET /api/models/{repo}[/revision/{rev}]`: repo info (commit sha, file list), as `model_info` reads it;
- `HEAD|GET /{repo}/resolve/{rev}/{path}`: a file, with `X-Repo-Commit` and `ETag` (as `hf_hub_download` needs);
- `GET /api/models/{repo}/tree/{rev}`: the file list with sizes (as `snapshot_download` reads it);
- `POST /api/models/{repo}/preupload/{rev}`: upload modes (every file "regular", with its current oid);
- `POST /api/models/{repo}/commit/{rev}[?create_pr=1]`: the ndjson commit; with create_pr it opens
  `refs/pr/N` and answers with the pull request URL;
- `GET /api/whoami-v2`: who a token belongs to and its role.

Errors carry `X-Error-Code` / `X-Error-Message` the way the Hub sends them, so huggingface_hub
raises its own typed errors (RepoNotFound, GatedRepo, RevisionNotFound, EntryNotFound). Every
request is recorded, and any endpoint can be told to fail next (`fail`), for the error paths."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from huggingface_hub import constants


def git_oid(data: bytes) -> str:
    """The git blob id of `data` (what the Hub uses as a regular file's ETag and oid)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Repo:
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    gated: bool = False
    private: bool = False
    owner_tokens: set[str] = field(default_factory=set)  # who can see a private repo / pass its gate


@dataclass
class Token:
    name: str
    role: str = "write"  # "write" | "read" | "fineGrained"
    can_write: bool = True  # a fine-grained token may lack write/PR permission on a repo


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    kind: str
    authorization: str | None


class FakeHub:
    """Start with `with FakeHub() as hub:`; `hub.url` is the endpoint to give huggingface_hub."""

    def __init__(self) -> None:
        self.repos: dict[str, Repo] = {}
        self.tokens: dict[str, Token] = {}
        self.requests: list[Request] = []
        self.commits: list[dict] = []  # every commit received: repo, revision, create_pr, header, files, deleted
        self._failures: dict[str, list[tuple[int, str | None, str | None]]] = {}
        # Bytes per second a file download is sent at (None: at once), to watch a download's progress.
        self.download_rate: float | None = None
        # When set to an Event: a download sends its first piece, then waits (up to 30 s) until the
        # event is set, so a test sees the progress mid-way however busy the machine is.
        self.downloads_released: threading.Event | None = None
        self._lock = threading.Lock()
        self._counter = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- setting the scene --------------------------------------------------------------------
    def add_repo(self, repo_id: str, files: dict[str, bytes], *, gated: bool = False, private: bool = False,
                 owner_tokens: set[str] | None = None) -> str:
        """A repo whose main branch holds `files`; returns the commit sha."""
        repo = Repo(gated=gated, private=private, owner_tokens=set(owner_tokens or ()))
        sha = self._new_sha()
        repo.commits[sha] = dict(files)
        repo.refs["main"] = sha
        self.repos[repo_id] = repo
        return sha

    def push(self, repo_id: str, files: dict[str, bytes], branch: str = "main") -> str:
        """Someone else commits to `branch`: its files become `files`."""
        sha = self._new_sha()
        self.repos[repo_id].commits[sha] = dict(files)
        self.repos[repo_id].refs[branch] = sha
        return sha

    def add_token(self, token: str, name: str = "author", role: str = "write", can_write: bool = True) -> None:
        self.tokens[token] = Token(name, role, can_write)

    def fail(self, kind: str, status: int, error_code: str | None = None, message: str | None = None,
             times: int = 1) -> None:
        """Make the next `times` requests of `kind` (info, resolve, preupload, commit, whoami) fail."""
        self._failures.setdefault(kind, []).extend([(status, error_code, message)] * times)

    def files_at(self, repo_id: str, ref: str) -> dict[str, bytes]:
        repo = self.repos[repo_id]
        return repo.commits[repo.refs[ref]]

    def _new_sha(self) -> str:
        with self._lock:
            self._counter += 1
            return hashlib.sha1(f"commit {self._counter}".encode()).hexdigest()


class _Reply(Exception):
    """An error response: status, X-Error-Code, X-Error-Message."""

    def __init__(self, status: int, code: str | None = None, message: str | None = None, headers: dict | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers or {}


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # One request per connection: stopping the server then really cuts the client off (a kept-alive
        # connection would outlive it), which is how the tests take the network down.
        protocol_version = "HTTP/1.0"

        def log_message(self, *args) -> None:  # keep test output quiet
            pass

        def do_GET(self) -> None:
            self._serve("GET")

        def do_HEAD(self) -> None:
            self._serve("HEAD")

        def do_POST(self) -> None:
            self._serve("POST")

        # --- routing ------------------------------------------------------------------------
        def _serve(self, method: str) -> None:
            split = urlsplit(self.path)
            parts = [unquote(p) for p in split.path.strip("/").split("/")]
            query = parse_qs(split.query)
            self._query = query
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else b""
            kind, route = self._route(method, parts)
            hub.requests.append(Request(method, split.path, query, kind, self.headers.get("Authorization")))
            try:
                if hub._failures.get(kind):
                    raise _Reply(*hub._failures[kind].pop(0))
                if route is None:
                    raise _Reply(404, None, "Not Found")
                status, headers, content = route(query, body)
            except _Reply as e:
                headers = {"Content-Type": "application/json", **e.headers}
                if e.code:
                    headers["X-Error-Code"] = e.code
                if e.message:
                    headers["X-Error-Message"] = e.message
                status, content = e.status, json.dumps({"error": e.message or "error"}).encode()
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            if method == "HEAD":
                return
            if kind == "resolve" and hub.download_rate and status == 200:
                piece = max(1, int(hub.download_rate / 20))  # 20 pieces a second
                for start in range(0, len(content), piece):
                    self.wfile.write(content[start : start + piece])
                    self.wfile.flush()
                    if start == 0 and hub.downloads_released is not None:
                        hub.downloads_released.wait(30)
                    time.sleep(0.05)
                return
            self.wfile.write(content)

        def _route(self, method: str, parts: list[str]):
            if parts[:2] == ["api", "whoami-v2"] and method == "GET":
                return "whoami", lambda q, b: self._whoami()
            if parts[:2] == ["api", "models"]:
                rest = parts[2:]
                if "tree" in rest and method == "GET":  # the file list snapshot_download reads
                    i = rest.index("tree")
                    repo_id, revision = "/".join(rest[:i]), "/".join(rest[i + 1:])
                    return "tree", lambda q, b: self._tree(repo_id, revision)
                for keyword in ("revision", "preupload", "commit"):
                    if keyword in rest:
                        i = rest.index(keyword)
                        repo_id, revision = "/".join(rest[:i]), "/".join(rest[i + 1:])
                        if keyword == "revision" and method == "GET":
                            return "info", lambda q, b: self._info(repo_id, revision)
                        if keyword == "preupload" and method == "POST":
                            return "preupload", lambda q, b: self._preupload(repo_id, revision, b)
                        if keyword == "commit" and method == "POST":
                            return "commit", lambda q, b: self._commit(repo_id, revision, q, b)
                        return keyword, None
                if method == "GET":
                    return "info", lambda q, b: self._info("/".join(rest), "main")
                return "api", None
            if "resolve" in parts and method in ("GET", "HEAD"):
                i = parts.index("resolve")
                repo_id, revision, path = "/".join(parts[:i]), parts[i + 1], "/".join(parts[i + 2:])
                return "resolve", lambda q, b: self._resolve(repo_id, revision, path)
            return "unknown", None

        # --- auth -----------------------------------------------------------------------------
        def _token(self) -> str | None:
            header = self.headers.get("Authorization") or ""
            if not header:
                return None
            token = header.removeprefix("Bearer ").strip()
            if token not in hub.tokens:
                raise _Reply(401, None, "Invalid credentials in Authorization header")
            return token

        def _repo(self, repo_id: str, token: str | None) -> Repo:
            repo = hub.repos.get(repo_id)
            if repo is None or (repo.private and token not in repo.owner_tokens):
                raise _Reply(404, "RepoNotFound", "Repository not found")
            return repo

        def _commit_sha(self, repo: Repo, revision: str) -> str:
            if revision in repo.refs:
                return repo.refs[revision]
            if revision in repo.commits:
                return revision
            raise _Reply(404, "RevisionNotFound", "Invalid rev id: " + revision)

        # --- endpoints ------------------------------------------------------------------------
        def _whoami(self):
            token = self._token()
            if token is None:
                raise _Reply(401, None, "Invalid credentials in Authorization header")
            info = hub.tokens[token]
            data = {"type": "user", "name": info.name,
                    "auth": {"type": "access_token", "accessToken": {"displayName": "playground", "role": info.role}}}
            return 200, {"Content-Type": "application/json"}, json.dumps(data).encode()

        def _info(self, repo_id: str, revision: str):
            repo = self._repo(repo_id, self._token())
            sha = self._commit_sha(repo, revision)
            files = repo.commits[sha]
            # With files_metadata (`?blobs=true`), each file's size, as the local runner reads it.
            with_sizes = "blobs" in self._query
            data = {"id": repo_id, "modelId": repo_id, "sha": sha, "private": repo.private,
                    "gated": "manual" if repo.gated else False,
                    "siblings": [{"rfilename": p, **({"size": len(files[p])} if with_sizes else {})} for p in sorted(files)]}
            return 200, {"Content-Type": "application/json"}, json.dumps(data).encode()

        def _tree(self, repo_id: str, revision: str):
            repo = self._repo(repo_id, self._token())
            files = repo.commits[self._commit_sha(repo, revision)]
            data = [{"type": "file", "path": p, "size": len(files[p]), "oid": git_oid(files[p])} for p in sorted(files)]
            return 200, {"Content-Type": "application/json"}, json.dumps(data).encode()

        def _resolve(self, repo_id: str, revision: str, path: str):
            token = self._token()
            repo = self._repo(repo_id, token)
            sha = self._commit_sha(repo, revision)
            if repo.gated and token not in repo.owner_tokens:
                raise _Reply(403, "GatedRepo", f"Access to model {repo_id} is restricted.")
            files = repo.commits[sha]
            if path not in files:
                raise _Reply(404, "EntryNotFound", "Entry not found", {"X-Repo-Commit": sha})
            data = files[path]
            headers = {"X-Repo-Commit": sha, "ETag": f'"{git_oid(data)}"', "Content-Type": "text/plain; charset=utf-8"}
            return 200, headers, data

        def _writer(self, repo_id: str) -> tuple[Repo, str]:
            token = self._token()
            repo = self._repo(repo_id, token)
            if token is None:
                raise _Reply(401, None, "You must be authenticated to write")
            if hub.tokens[token].role == "read" or not hub.tokens[token].can_write:
                raise _Reply(403, None, "You don't have the rights to create a pull request on this repo")
            return repo, token

        def _preupload(self, repo_id: str, revision: str, body: bytes):
            repo, _ = self._writer(repo_id)
            files = repo.commits[self._commit_sha(repo, revision)]
            answer = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                       "oid": git_oid(files[f["path"]]) if f["path"] in files else None}
                      for f in json.loads(body)["files"]]
            return 200, {"Content-Type": "application/json"}, json.dumps({"files": answer}).encode()

        def _commit(self, repo_id: str, revision: str, query: dict, body: bytes):
            repo, _ = self._writer(repo_id)
            lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
            header = lines[0]["value"] if lines and lines[0]["key"] == "header" else {}
            head = self._commit_sha(repo, revision)
            parent = header.get("parentCommit") or head
            if parent not in repo.commits:
                raise _Reply(400, None, "Invalid parent commit")
            create_pr = query.get("create_pr") == ["1"]
            if not create_pr and parent != head:
                raise _Reply(412, None, "A commit has happened since. Please refresh and try again.")
            files = dict(repo.commits[parent])
            written, deleted = {}, []
            for op in lines[1:]:
                value = op["value"]
                if op["key"] == "file":
                    written[value["path"]] = base64.b64decode(value["content"])
                elif op["key"] == "deletedFile":
                    if value["path"] not in files:
                        raise _Reply(404, "EntryNotFound", "A file with this name doesn't exist")
                    deleted.append(value["path"])
                else:
                    raise _Reply(400, None, f"unsupported operation {op['key']}")
            files.update(written)
            for path in deleted:
                files.pop(path)
            sha = hub._new_sha()
            repo.commits[sha] = files
            answer = {"commitUrl": f"{hub.url}/{repo_id}/commit/{sha}", "commitOid": sha}
            if create_pr:
                number = sum(ref.startswith("refs/pr/") for ref in repo.refs) + 1
                repo.refs[f"refs/pr/{number}"] = sha
                answer["pullRequestUrl"] = f"{hub.url}/{repo_id}/discussions/{number}"
            else:
                repo.refs[revision] = sha
            hub.commits.append({"repo": repo_id, "revision": revision, "create_pr": create_pr, "header": header,
                                "files": written, "deleted": deleted, "sha": sha})
            return 200, {"Content-Type": "application/json"}, json.dumps(answer).encode()

    return Handler


@pytest.fixture(autouse=True)
def no_ambient_credentials(monkeypatch, tmp_path):
    """Tests never see a real token or endpoint of the machine they run on."""
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token-here"))
