from .reproducibility import main

main()
