from memlab.launch import entry

entry()
