from agenteval_cli.cli import main

main()
