from memlab.launch import main

main()
