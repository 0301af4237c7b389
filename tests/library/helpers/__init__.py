"""What the library's tests share: a project to serve (project.py) and the processes they start (runs.py)."""
