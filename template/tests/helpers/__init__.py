"""What the tests share besides fixtures (those are in conftest.py): project.py, the package under test, and
runs.py, training runs cut down to seconds."""
