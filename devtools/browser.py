"""Debian's Chromium as the browser tests, bench/bench_pages.py and scripts/screenshots.py start it."""

CHROMIUM = "/usr/bin/chromium"
# As root Chromium needs --no-sandbox; the machine has no internet, so nothing may phone home.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: The two sizes every page is tried at: a laptop, and a phone.
SIZES = {
    "desktop": {"viewport": {"width": 1366, "height": 900}},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "device_scale_factor": 2,
        "is_mobile": True,
        "has_touch": True,
    },
}
