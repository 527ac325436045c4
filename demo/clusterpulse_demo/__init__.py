"""``clusterpulse demo``: the real manager and plugins against an emulated fleet and a real Redis."""
