from memlab.cli import main

main()
