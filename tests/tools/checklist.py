"""The tool tests' checklist: each check printed as it runs ("ok" or
"FAIL" and what it checks), a failure's detail under it, and at the end one
summary line and the exit status (1 when any check failed)."""
import sys

failures = []
count = 0


def check(cond, what, detail=""):
    """Records one check; returns whether it held."""
    global count
    count += 1
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)
        if detail:
            print("     " + str(detail).strip()[-800:].replace("\n", "\n     "))
    return bool(cond)


def finish():
    print(f"{count - len(failures)}/{count} checks passed")
    sys.exit(1 if failures else 0)
