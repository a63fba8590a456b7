from modelplatform.composition.cli import main

main()
