"""`cudalint smoke --init`: a smoke target written from what a reading of the project (`ast`, no
torch) finds: its model classes and their constructors, its optimizer and loss, its checkpoint
calls. `facts` reads the project, `values` guesses the arguments, `writer` writes the file,
`init` is the command."""
