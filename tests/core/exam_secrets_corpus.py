"""A corpus of secrets planted in exam-shaped text, and of ordinary code that merely looks like one.

An exam directory holds an instruction a person wrote, a ``workspace.patch`` of their uncommitted files
(``.env``, ``config.py``, ``settings.js``, ``application.yml``, ``docker-compose.yml``) and shell commands
(``verify.sh``, ``command_passes`` assertions). :data:`PLANTED` puts credentials in each of those shapes,
each with the exact secret string that must not survive ``assay export``; :data:`LOOK_ALIKES` are lines of
ordinary code and lockfiles (git SHAs, integrity hashes, UUIDs, base64 fixtures, ``token = tokenize(text)``,
``MAX_TOKENS = 4096``, references to secrets such as ``os.environ["API_KEY"]``) that export should leave
exactly as they are.

Every entry names its ``kind``: ``patch`` (a unified diff, redacted line by line), ``instruction`` (markdown
prose) or ``script`` (shell lines). The secrets are made up, built from a seeded generator so the corpus is
the same on every run and no real-looking key is committed verbatim. Used by
``tests/flows/test_exam_export.py`` and ``bench/exam_redaction.py``.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass
from typing import Literal

_rng = random.Random(20261201)
_ALNUM = string.ascii_letters + string.digits
_UPPER = string.ascii_uppercase + string.digits

Kind = Literal["patch", "instruction", "script"]


def _s(n: int, alphabet: str = _ALNUM) -> str:
    body = "".join(_rng.choice(alphabet) for _ in range(n))
    return body[:-1] + _rng.choice(string.digits)  # at least one digit, as real keys have


@dataclass(frozen=True)
class ExamPlanted:
    """One secret placed in exam-shaped text."""

    kind: Kind
    what: str
    """A short description: where it sits and what it is."""
    text: str
    secret: str
    """The exact text that must not survive redaction."""


@dataclass(frozen=True)
class ExamLookAlike:
    """Exam-shaped text that resembles a credential but holds none; redaction must not change it."""

    kind: Kind
    what: str
    text: str


def new_file_diff(path: str, lines: list[str]) -> str:
    """A unified diff adding ``path`` with ``lines`` (as ``git diff`` writes an untracked file)."""
    head = (f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n"
            f"+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n")  # fmt: skip
    return head + "".join(f"+{line}\n" for line in lines)


def change_diff(path: str, before: list[str], added: list[str]) -> str:
    """A unified diff adding ``added`` after the context lines ``before`` of ``path``."""
    head = (f"diff --git a/{path} b/{path}\nindex 2222222..3333333 100644\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -1,{len(before)} +1,{len(before) + len(added)} @@\n")  # fmt: skip
    return head + "".join(f" {line}\n" for line in before) + "".join(f"+{line}\n" for line in added)


def _secrets() -> dict[str, str]:
    return {
        "aws_id": "AKIA" + _s(16, _UPPER),
        "aws_secret": _s(40, _ALNUM + "/+"),
        "ghp": "ghp_" + _s(36),
        "github_pat": "github_pat_" + _s(22) + "_" + _s(59),
        "slack": "xoxb-" + _s(12, string.digits) + "-" + _s(13, string.digits) + "-" + _s(24),
        "stripe": "sk_live_" + _s(24),
        "openai": "sk-proj-" + _s(48, _ALNUM + "_-"),
        "anthropic": "sk-ant-api03-" + _s(80, _ALNUM + "_-"),
        "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI" + _s(24) + "." + _s(43, _ALNUM + "_-"),
        "db_password": "Pw" + _s(14),
        "django": "django-insecure-" + _s(40, string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)"),
        "session": _s(64, "0123456789abcdef"),
        "yaml_password": _s(20),
        "compose_password": _s(16),
        "bearer": _s(40, _ALNUM + "-._~"),
        "mysql": "My" + _s(12),
        "cli_password": "Cl" + _s(14),
        "exported": _s(32),
        "prose_password": "Tr0ub4dor-" + _s(8),
        "redis": _s(24),
    }


SECRETS = _secrets()
_RSA_LINES = ["-----BEGIN RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA" + _s(48, _ALNUM + "+/"),
              _s(64, _ALNUM + "+/"), _s(64, _ALNUM + "+/"), "-----END RSA PRIVATE KEY-----"]  # fmt: skip
_OPENSSH_LINES = ["-----BEGIN OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAA" + _s(46, _ALNUM + "+/"),
                  _s(70, _ALNUM + "+/"), "-----END OPENSSH PRIVATE KEY-----"]  # fmt: skip


def _planted() -> list[ExamPlanted]:
    s = SECRETS
    p: list[ExamPlanted] = []
    env = [
        ("aws access key id in .env", "AWS_ACCESS_KEY_ID={aws_id}", "aws_id"),
        ("aws secret in .env", "AWS_SECRET_ACCESS_KEY={aws_secret}", "aws_secret"),
        ("github token in .env", "GITHUB_TOKEN={ghp}", "ghp"),
        ("slack bot token in .env", "SLACK_BOT_TOKEN={slack}", "slack"),
        ("stripe key in .env", "STRIPE_SECRET_KEY={stripe}", "stripe"),
        ("openai key in .env", "OPENAI_API_KEY={openai}", "openai"),
        ("anthropic key in .env", "ANTHROPIC_API_KEY=\"{anthropic}\"", "anthropic"),
        ("db url in .env", "DATABASE_URL=postgres://acme:{db_password}@db.internal:5432/acme", "db_password"),
        ("redis url with an empty user in .env", "REDIS_URL=redis://:{redis}@cache:6379/0", "redis"),
        ("session secret in .env", "SESSION_SECRET={session}", "session"),
    ]
    for what, line, key in env:
        p.append(ExamPlanted("patch", what, new_file_diff(".env", ["# local settings", line.format(**s)]), s[key]))
    config_py = [
        ("django secret key in settings.py", "SECRET_KEY = '{django}'", "django"),
        ("db password in a DATABASES dict", "        'PASSWORD': '{db_password}',", "db_password"),
        ("aws keys passed to boto3", "s3 = boto3.client('s3', aws_access_key_id='{aws_id}')", "aws_id"),
        ("aws secret passed to boto3", "    aws_secret_access_key=\"{aws_secret}\",", "aws_secret"),
        ("openai client with a key", "client = OpenAI(api_key=\"{openai}\")", "openai"),
        ("anthropic client with a key", "client = anthropic.Anthropic(api_key='{anthropic}')", "anthropic"),
        ("a jwt in a test helper", "TEST_JWT = \"{jwt}\"", "jwt"),
        ("a fine-grained github token as a default", "TOKEN = os.environ.get('GH_TOKEN', '{github_pat}')",
         "github_pat"),
    ]  # fmt: skip
    for what, line, key in config_py:
        p.append(ExamPlanted("patch", what, change_diff("config.py", ["import os", ""], [line.format(**s)]), s[key]))
    settings_js = [
        ("stripe key in settings.js", "  stripeKey: '{stripe}',", "stripe"),
        ("slack token in settings.js", "const slack = new WebClient(\"{slack}\");", "slack"),
        ("a bearer header in settings.js", "  headers: {{ Authorization: `Bearer {bearer}` }},", "bearer"),
        ("a jwt secret in settings.js", "  jwtSecret: \"{session}\",", "session"),
    ]
    for what, line, key in settings_js:
        diff = change_diff("src/settings.js", ["module.exports = {"], [line.format(**s)])
        p.append(ExamPlanted("patch", what, diff, s[key]))
    yaml_files = [
        ("application.yml", "spring datasource password", ["spring:", "  datasource:",
                                                           "    password: {yaml_password}"], "yaml_password"),
        ("application.yml", "a db url in application.yml", ["    url: jdbc:postgresql://acme:{db_password}@db/acme"],
         "db_password"),
        ("docker-compose.yml", "a compose environment mapping", ["    environment:",
                                                                "      POSTGRES_PASSWORD: {compose_password}"],
         "compose_password"),
        ("docker-compose.yml", "a compose environment list", ["      - MYSQL_ROOT_PASSWORD={mysql}"], "mysql"),
        ("docker-compose.yml", "a github token in a compose build arg", ["      args:", "        - GH_TOKEN={ghp}"],
         "ghp"),
    ]  # fmt: skip
    for path, what, lines, key in yaml_files:
        p.append(ExamPlanted("patch", what, new_file_diff(path, [line.format(**s) for line in lines]), s[key]))
    for lines in (_RSA_LINES, _OPENSSH_LINES):
        diff = new_file_diff("deploy/id_key", lines)
        for secret_line in lines[1:-1]:
            p.append(ExamPlanted("patch", f"a private key block body line ({lines[0][11:-5].lower()})", diff,
                                 secret_line))
    prose = [
        ("an openai key pasted in the ask", "The tests call the API; use my key {openai} when you run them.",
         "openai"),
        ("a github token pasted in the ask", "Push with this token if you need to: {ghp}", "ghp"),
        ("aws keys pasted in the ask", "Creds for the bucket: AWS_ACCESS_KEY_ID={aws_id} and "
                                       "AWS_SECRET_ACCESS_KEY={aws_secret}", "aws_secret"),
        ("a db url pasted in the ask", "The staging db is postgresql://admin:{db_password}@staging.acme.dev/app",
         "db_password"),
        ("a password said in prose", "Log in as admin; the staging password is {prose_password} for now.",
         "prose_password"),
        ("a curl command with a bearer header in the ask",
         "This fails:\n\n```\ncurl -H 'Authorization: Bearer {bearer}' https://api.acme.dev/v1/orders\n```",
         "bearer"),
        ("a stripe key in an inline code span", "Stripe is configured with `{stripe}` in test mode.", "stripe"),
        ("a jwt pasted in the ask", "Decode this token and tell me why it expires: {jwt}", "jwt"),
        ("a slack token in the ask", "Notifications go through {slack}.", "slack"),
        ("an anthropic key in the ask", "My key: {anthropic}", "anthropic"),
    ]  # fmt: skip
    for what, text, key in prose:
        p.append(ExamPlanted("instruction", what, text.format(**s), s[key]))
    p.append(ExamPlanted("instruction", "a private key pasted in the ask",
                         "Deploy with this key:\n\n" + "\n".join(_RSA_LINES) + "\n", _RSA_LINES[2]))
    scripts = [
        ("mysql with a glued -p password", "mysql -u root -p{mysql} acme < schema.sql", "mysql"),
        ("mysqldump with a quoted -p password", "mysqldump -h db -u acme -p'{mysql}' acme > dump.sql", "mysql"),
        ("a --password= flag", "./manage.py createsuperuser --username admin --password={cli_password}",
         "cli_password"),
        ("a --password flag and a space", "psql-wrapper --user acme --password {cli_password} --db acme",
         "cli_password"),
        ("an exported token", "export API_TOKEN={exported}", "exported"),
        ("an exported aws secret", "export AWS_SECRET_ACCESS_KEY=\"{aws_secret}\"", "aws_secret"),
        ("a password in an env prefix", "PGPASSWORD={db_password} psql -h db -U acme -c 'select 1'", "db_password"),
        ("a bearer header in curl", "curl -sf -H \"Authorization: Bearer {bearer}\" http://localhost:8000/health",
         "bearer"),
        ("a github token in a clone url", "git clone https://x-access-token:{ghp}@github.com/acme/shop.git", "ghp"),
    ]  # fmt: skip
    for what, line, key in scripts:
        p.append(ExamPlanted("script", what, f"#!/usr/bin/env bash\nset -u\n{line.format(**s)}\npytest -q\n", s[key]))
    return p


PLANTED: list[ExamPlanted] = _planted()

_FIXTURE = base64.b64encode(bytes(range(48)) * 2).decode()
_INTEGRITY = "sha512-" + base64.b64encode(bytes(range(64))).decode()
_LOOK_ALIKE_LINES: list[tuple[str, str, list[str]]] = [
    ("package-lock.json", "npm integrity and resolved url", [
        '    "node_modules/left-pad": {', '      "version": "1.3.0",',
        '      "resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz",',
        f'      "integrity": "{_INTEGRITY}",', "    },"]),
    ("yarn.lock", "yarn checksum", ['  resolved "https://registry.yarnpkg.com/ms/-/ms-2.1.3.tgz#574c8138ce1d2b5861f0b44'
                                    '579dbadd60c6615b2"', f'  integrity {_INTEGRITY}']),
    ("poetry.lock", "poetry hashes", ['content-hash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b78'
                                      '52b855"', '{file = "idna-3.7-py3-none-any.whl", hash = "sha256:82fee1fc78add434'
                                      '92d3a1898bfa6d8a904cc97d8427f683ed8e798d07761aa0"}']),
    ("Cargo.lock", "a cargo checksum", ['checksum = "b2d7b1ab0bc3d3e2e2bf5c66eb3e7b4fd1e4b7a24c5f3ba3e8d1f0e9a2b3c4'
                                        'd5"']),
    ("go.sum", "a go.sum hash", ["golang.org/x/text v0.14.0 h1:ScX5w1eTa3QqT8oi6+ziP7dTV1S2+ALU0bI+0zXKWiQ="]),
    ("flake.lock", "a git sha in a lockfile", ['        "rev": "9fceb02d0ae598e95dc970b74767f19372d61af8",']),
    ("ids.py", "a uuid constant", ['TENANT_ID = "123e4567-e89b-12d3-a456-426614174000"']),
    ("tests/fixtures.py", "a base64 test fixture", [f'PNG_FIXTURE = "{_FIXTURE}"']),
    ("text.py", "token = tokenize(text)", ["    token = tokenize(text)", "    tokens = [t.lower() for t in token]"]),
    ("forms.py", "a password field name", ['password_field = "password"', "    label = 'Password'"]),
    ("limits.py", "a token limit", ["MAX_TOKENS = 4096", "max_tokens: int = 1024"]),
    ("theme.css", "hex colours", [".btn { color: #ff00aa; background: #1A2B3C; border-color: #000; }"]),
    ("package.json", "semver strings", ['  "version": "2.3.1-rc.4+build.567",', '    "typescript": "^5.4.2"']),
    ("secrets.py", "a function named get_secret_name", ["def get_secret_name(arn: str) -> str:",
                                                        "    name = get_secret_name(arn)"]),
    ("config.py", "a key read from the environment", ['OPENAI_API_KEY = os.environ["OPENAI_API_KEY"]',
                                                      '    api_key = os.getenv("STRIPE_KEY")']),
    ("settings.js", "a key read from process.env", ["  apiKey: process.env.STRIPE_KEY,",
                                                    "  password: config.db.password,"]),
    ("docker-compose.yml", "compose interpolation", ["      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD}"]),
    (".github/workflows/ci.yml", "an actions secret reference", ["          token: ${{ secrets.GITHUB_TOKEN }}"]),
    ("models.py", "annotated secret fields", ["    password: str", "    refresh_token: Optional[str] = None",
                                              "    api_key: str | None = None"]),
    ("api.ts", "a typed token field", ["  token: string;", "  accessToken?: string | null;"]),
    ("auth.py", "a hashed password call", ["    password_hash = bcrypt.hashpw(raw, bcrypt.gensalt())",
                                           "    csrf_token = request.cookies.get('csrftoken')"]),
    ("keys.py", "identifier keys", ['    cache_key = f"user:{user_id}"', "    idempotency_key = uuid4().hex",
                                    '    primary_key = "order_id"']),
    ("urls.py", "a token endpoint", ['TOKEN_URL = "https://oauth2.example.invalid/token"',
                                     'DOCS = "https://docs.example.invalid/guide?page=2&sort=asc"']),
    ("authorized_keys", "a public ssh key", ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHn8f2m dev@laptop"]),
    ("README.md", "prose about tokens", ["Each request costs tokens; the token budget resets daily.",
                                         "The `sk-` prefix marks secret keys; never commit one."]),
]  # fmt: skip


def _look_alikes() -> list[ExamLookAlike]:
    out = [ExamLookAlike("patch", what, change_diff(path, ["# context"], lines)) for path, what, lines in
           _LOOK_ALIKE_LINES]  # fmt: skip
    out += [
        ExamLookAlike("script", "pytest with a -p plugin flag", "#!/usr/bin/env bash\nset -u\n"
                                                                 "python -m pytest -q -p no:cacheprovider tests\n"),
        ExamLookAlike("script", "ssh and docker -p ports", "ssh -p 2222 deploy@build.internal 'make'\n"
                                                           "docker run -p 8080:80 acme/shop\nmkdir -p build/out\n"),
        ExamLookAlike("script", "a password read from a variable", 'mysql -u acme -p"$DB_PASSWORD" acme < s.sql\n'
                                                                   "export API_TOKEN=$(cat .token)\n"),
        ExamLookAlike("instruction", "an ask about tokens", "Fix the tokenizer: `tokenize('a b')` should give two "
                                                            "tokens, and MAX_TOKENS = 4096 must hold."),
        ExamLookAlike("instruction", "an ask naming a commit and a uuid", "Since commit 9fceb02d0ae598e95dc970b74767"
                                                                          "f19372d61af8 order "
                                                                          "123e4567-e89b-12d3-a456-426614174000 "
                                                                          "is billed twice."),
        ExamLookAlike("instruction", "an ask about the password form", "The password field on the login form "
                                                                       "should say 'Password' and the secret "
                                                                       "manager name comes from get_secret_name()."),
    ]  # fmt: skip
    return out


LOOK_ALIKES: list[ExamLookAlike] = _look_alikes()


__all__ = ["ExamLookAlike", "ExamPlanted", "LOOK_ALIKES", "PLANTED", "SECRETS", "change_diff", "new_file_diff"]
