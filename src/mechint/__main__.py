from mechint.cli.main import main

main()
