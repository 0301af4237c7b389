"""What the template's tests share, by concept; conftest.py holds only fixtures and hooks, and no test module
imports another (tests/library/test_layout.py checks it).

generation.py          this checkout (ROOT) and generating projects from it with Copier
git.py                 git in a folder, a test identity, local repositories as submodule sources
commands.py            commands in a generated project, killed whole when they run out of time
template_versions.py   throwaway template repositories with real, tagged versions (the update tests)
containers.py          a container engine and a local stand-in for the Dockerfile's base image
slurm_cluster.py       a real one-node Slurm cluster on localhost (the launcher's tests)
"""
