"""Hub I/O: which files a repo, a folder or an upload holds, and the files `save_pretrained` writes.
Publishing them as a pull request is `engine.publish` (it also says what changes for the model,
which needs the layers above this one). The Publish tab is a thin layer over these calls:

    base = load_templates("owner/model", revision)            # what the editors start from
    plan = plan_publish("owner/model", chat, response, token=t)  # files save_pretrained writes + diff
    plan.diff(), plan.title, plan.description                   # shown before anything is sent
    publish(plan, token=t, title=..., description=...)          # -> PR url | Diagnostic
    plan.zip()                                                  # the same files, to upload by hand
"""

from .errors import hub_error, redact
from .files import (
    BuiltFiles,
    FileChange,
    TemplatesFound,
    build_files,
    config_bytes,
    diff_files,
    read_templates,
    zip_files,
)
from .load import HubTemplates, hub_endpoint, load_folder, load_repo, load_templates, local_token
from .uploads import read_uploads

__all__ = [
    "BuiltFiles",
    "FileChange",
    "HubTemplates",
    "TemplatesFound",
    "build_files",
    "config_bytes",
    "diff_files",
    "hub_endpoint",
    "hub_error",
    "load_folder",
    "load_repo",
    "load_templates",
    "local_token",
    "read_templates",
    "read_uploads",
    "redact",
    "zip_files",
]
